import { withTransaction, type Pool, type Queryable } from "../packages/runtime/src/db/index.ts";
import { getProjectByRef, listTokenRows, parseTokenListFilter } from "../packages/runtime/src/engine/index.ts";
import { timeReads } from "./history-reads.ts";
import { preloadRuns, preloadTokens } from "./run-list-preload.ts";
import { benchDatabase, benchStack } from "./setup.ts";
import { settle } from "./settle.ts";
import { line, now, percentiles } from "./stats.ts";
import { deepCursor, tokenLister, tokenQueries, type ReadCase } from "./token-reads.ts";

const GOAL_MS = 20;

/** Filter combinations beyond the history scenario's cases (each shape the list statement takes). */
function moreQueries(loadedAt: Date): [string, Record<string, string>][] {
  const daysAgo = (days: number) => new Date(loadedAt.getTime() - days * 86_400_000).toISOString();
  return [
    ["status=WAITING,TIMED_OUT", { "filter[status]": "WAITING,TIMED_OUT" }],
    ["status=COMPLETED,WAITING", { "filter[status]": "COMPLETED,WAITING" }],
    ["status=WAITING, tag (tok-07)", { "filter[status]": "WAITING", "filter[tags]": "tok-07" }],
    ["status=COMPLETED, one day, 10 days ago", { "filter[status]": "COMPLETED", "filter[createdAt][from]": daysAgo(11), "filter[createdAt][to]": daysAgo(10) }],
  ];
}

/**
 * `BENCH=tokens`: the waitpoint-token list (`GET /api/v1/waitpoints/tokens`) over the history
 * scenario's tokens on DATABASE_URL's server: `runs` runs preloaded in SQL
 * (bench/run-list-preload.ts: five sixths in the listed environment, 30 days, a completed token in
 * one finished run in `tokensEvery` (10, as the history scenario; 1 gives 1.2 M runs as many tokens
 * as 10 M runs have), a waiting token per waiting run), then each case of the history
 * scenario and a few filter combinations `samples` times, one request at a time, the cases taken
 * in turn; then EXPLAIN (ANALYZE, BUFFERS) of each case's statement and the bytes of each
 * `waitpoints` index. `BENCH_TOKENS_KEEP=1` keeps the database and prints its URL.
 */
export async function tokenListScenario(embedded: { url: string } | undefined, options: { runs: number; tokensEvery: number; samples: number; pages: number }): Promise<string[]> {
  const db = await benchDatabase("tokens", embedded);
  const stack = await benchStack(db.url, { api: true, poolMax: 4 });
  const keep = process.env.BENCH_TOKENS_KEEP === "1";
  try {
    const pool = stack.pool;
    const main = stack.project.environments.dev;
    const project = await getProjectByRef(pool, stack.project.projectRef);
    const loadedAt = new Date();
    const listed = Math.round((options.runs * 5) / 6 / 500) * 500;
    let t0 = now();
    await preloadRuns(pool, { mainEnvironmentId: main.id, otherEnvironmentId: stack.project.environments.prod.id, projectId: project.id, runs: listed, days: 30, now: loadedAt });
    await preloadTokens(pool, options.tokensEvery);
    const loadMs = now() - t0;
    t0 = now();
    for (const table of ["runs", "waitpoints", "run_ledger"]) await pool.query(`VACUUM ANALYZE ${table}`);
    const vacuumMs = now() - t0;
    const unsettled = await settle(db.adminUrl);
    const { rows: counts } = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM waitpoints WHERE environment_id = $1 AND type = 'MANUAL' GROUP BY status ORDER BY status`,
      [main.id],
    );
    const { rows: keyed } = await pool.query<{ key: string }>(
      `SELECT idempotency_key AS key FROM waitpoints WHERE environment_id = $1 AND type = 'MANUAL' AND idempotency_key IS NOT NULL LIMIT 1`,
      [main.id],
    );

    const list = tokenLister(stack.apiUrl!, main.secretKey);
    const queries = [...tokenQueries({ loadedAt, idempotencyKey: keyed[0]?.key }), ...moreQueries(loadedAt)];
    const cursor = await deepCursor(list, options.pages);
    if (cursor) queries.push([`page ${options.pages + 1} through next cursors`, { "page[after]": cursor }]);
    const cases: ReadCase[] = queries.map(([label, query]) => ({ label, read: async () => (await list(query)).ms }));
    const timed = await timeReads(cases, options.samples);

    const lines = [
      `## Waitpoint-token list over ${((listed * 6) / 5).toLocaleString("en-US")} runs of history (goal p99 ≤ ${GOAL_MS} ms, client round trip)`,
      `preload: ${listed.toLocaleString("en-US")} runs in the listed environment + a fifth as many in another, over 30 days, with their tokens, ` +
        `in ${(loadMs / 1000).toFixed(0)} s, VACUUM ANALYZE ${(vacuumMs / 1000).toFixed(0)} s; the listed environment's tokens: ` +
        counts.map((c) => `${c.n.toLocaleString("en-US")} ${c.status}`).join(", "),
      ...cases.map((c) => line(`  ${c.label}`, percentiles(timed.get(c.label)!))),
      "",
      "EXPLAIN (ANALYZE, BUFFERS) of each case's statement:",
    ];
    for (const [label, query] of queries) {
      const filter = parseTokenListFilter(query, loadedAt);
      const after = query["page[after]"] ? (JSON.parse(Buffer.from(query["page[after]"], "base64url").toString()) as { c: number; r: string }) : null;
      const keyset = after ? { sql: "(created_at, id) < ($1, $2)", values: [new Date(after.c), after.r] } : null;
      lines.push(...(await explained(pool, label, (q) => listTokenRows(q, main.id, filter, keyset, "desc", 26))));
    }
    lines.push("", ...(await indexBytes(pool)));
    if (keep) lines.push(`(kept: ${db.url})`);
    if (unsettled) lines.push(unsettled);
    return lines;
  } finally {
    await stack.close();
    if (!keep) await db.close();
  }
}

/** The plan of `statement` as listTokenRows runs it (planner defaults): its nodes, buffers and time. */
async function explained(pool: Pool, label: string, statement: (q: Queryable) => Promise<unknown>): Promise<string[]> {
  const plan: string[] = [];
  await withTransaction(pool, async (tx) => {
    const explaining: Queryable = {
      query: (async (text: string, values?: unknown[]) => {
        const result = await tx.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
        plan.push(...result.rows.map((r) => r["QUERY PLAN"]));
        return { ...result, rows: [] };
      }) as unknown as Queryable["query"],
    };
    await statement(explaining);
  });
  const keep = plan.filter((l) => /Scan|Limit|Sort|Filter|Rows Removed|Buffers|Execution Time|Append|Bitmap|Index Cond|Gather/.test(l)).slice(0, 24);
  return [`${label}:`, ...keep.map((l) => `    ${l}`)];
}

/** Each index of `waitpoints`: its bytes, and per MANUAL waitpoint. */
async function indexBytes(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string; bytes: string; tokens: string }>(
    `SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes, (SELECT count(*) FROM waitpoints WHERE type = 'MANUAL') AS tokens
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'waitpoints'::regclass ORDER BY c.relname`,
  );
  return [
    `waitpoints indexes (${Number(rows[0]?.tokens ?? 0).toLocaleString("en-US")} tokens):`,
    ...rows.map((r) => `  ${r.name.padEnd(40)} ${(Number(r.bytes) / 1_048_576).toFixed(1).padStart(8)} MB  ${(Number(r.bytes) / Number(r.tokens)).toFixed(1)} bytes per token`),
  ];
}
