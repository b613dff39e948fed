import { createHash } from "node:crypto";
import type { Pool } from "../packages/runtime/src/db/index.ts";
import { listCases } from "./dashboard.ts";
import { request } from "./http-client.ts";
import { apiRunList } from "./run-list-client.ts";
import type { BenchStack } from "./setup.ts";
import { now } from "./stats.ts";
import { tokenLister, tokenReadCases, type ReadCase } from "./token-reads.ts";

export type { ReadCase };

/**
 * The reads the history scenario times, over the stack's API with the dev environment's secret
 * key: `GET /api/v1/runs` with each filter of the dashboard scenario (bench/dashboard.ts) and a
 * page reached through `pages` next cursors; `GET /api/v1/waitpoints/tokens` with each of its
 * filters and a deep page; `GET /api/v3/runs/{id}` of runs picked across the history. `loadedAt`
 * anchors the preload's window; `preloaded` says whether the preload's runs are there (when not,
 * only that each answer is a 200 is checked).
 */
export async function readCases(stack: BenchStack, options: { loadedAt: Date; preloaded: number; pages: number }): Promise<ReadCase[]> {
  const key = stack.project.environments.dev.secretKey;
  const envId = stack.project.environments.dev.id;
  const runs = apiRunList(stack.apiUrl!, key);
  const cases: ReadCase[] = [];
  for (const c of await listCases(stack.pool, envId, options.loadedAt)) {
    cases.push({
      label: `runs: ${c.label}`,
      read: async () => {
        const page = await runs.page(c.filter);
        const ok = !options.preloaded || (c.expect === "none" ? page.runs === 0 : c.expect === "full" ? page.runs === 25 : page.runs > 0);
        if (!ok) throw new Error(`runs list, ${c.label}: ${page.runs} runs on the page, expected ${c.expect}`);
        return page.clientMs;
      },
    });
  }
  let cursor: string | undefined;
  for (let p = 0; p < options.pages; p++) cursor = (await runs.page({}, cursor)).next ?? undefined;
  cases.push({ label: `runs: page ${options.pages + 1} through next cursors`, read: async () => (await runs.page({}, cursor)).clientMs });

  const { rows: keyed } = await stack.pool.query<{ key: string }>(
    `SELECT idempotency_key AS key FROM waitpoints WHERE environment_id = $1 AND type = 'MANUAL' AND idempotency_key IS NOT NULL LIMIT 1`,
    [envId],
  );
  cases.push(...(await tokenReadCases(tokenLister(stack.apiUrl!, key), { loadedAt: options.loadedAt, idempotencyKey: keyed[0]?.key, pages: options.pages })));

  const ids = await runIds(stack.pool, envId, options.preloaded);
  let next = 0;
  cases.push({
    label: "GET /api/v3/runs/{id}",
    read: async () => {
      const id = ids[next++ % ids.length]!;
      const t0 = now();
      const res = await request(new URL(`/api/v3/runs/${id}`, stack.apiUrl).toString(), { headers: { authorization: `Bearer ${key}` } });
      const ms = now() - t0;
      if (res.status !== 200) throw new Error(`GET /api/v3/runs/${id}: ${res.status} ${res.text.slice(0, 300)}`);
      return ms;
    },
  });
  return cases;
}

/**
 * Run ids of the dev environment spread over the whole history: the preload's ids are a function
 * of the row number (bench/run-list-preload.ts), so they are computed, not searched for.
 */
async function runIds(pool: Pool, envId: string, preloaded: number): Promise<string[]> {
  if (!preloaded) return (await pool.query<{ id: string }>(`SELECT id FROM runs WHERE environment_id = $1 LIMIT 200`, [envId])).rows.map((r) => r.id);
  const ids: string[] = [];
  for (let k = 0; ids.length < 500; k++) {
    const i = Math.floor(((k * 7_919 + 13) % 1_000) * (preloaded / 1_000)) + (k % 100);
    if (Math.floor(i / 100) % 6 === 5) continue; // the second environment's block
    ids.push(`run_${createHash("md5").update(`${i}r`).digest("hex").slice(0, 21)}`);
  }
  return ids;
}

/** Each case `samples` times, one request at a time, the cases taken in turn (after 2 unmeasured rounds). */
export async function timeReads(cases: ReadCase[], samples: number): Promise<Map<string, number[]>> {
  const out = new Map(cases.map((c) => [c.label, [] as number[]]));
  for (let round = 0; round < samples + 2; round++) {
    for (const c of cases) {
      const ms = await c.read();
      if (round >= 2) out.get(c.label)!.push(ms);
    }
  }
  return out;
}
