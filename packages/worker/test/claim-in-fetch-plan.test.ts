// The plan of a start queue's fetch with its claims, as planned for its values and as the generic
// plan its prepared statement may settle on: a full batch (200 jobs) is joined to its claims by
// hash, never by comparing every fetched job with every other. Twice a join of its CTEs
// went quadratic (a subquery per job, then nested loops over CTEs the planner took for one row)
// and batched triggers ran at a fraction of their speed while every test passed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { consumerFetch, startQueueName } from "@svc/queue";
import { startClaimsInFetch } from "../src/execution/claim.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const BATCH = 200;
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
  // Each with a concurrency key of its own: such runs go through start jobs (plain ones are claimed from runs).
  for (let i = 0; i < BATCH; i++) await triggerRun(te.engine, te.env, "planned", { i }, { concurrencyKey: `k${i}` });
  // As a busy queue's statistics often are: analyzed while it held no job.
  await te.db.pool.query(`ANALYZE pgboss.job_common`);
});
afterAll(async () => te?.close());

/** The statement a worker sends to fetch `queue` (consumerFetch of pg-boss's text, with the claims' tail). */
async function fetchStatement(queue: string) {
  let sent: { text: string; values: unknown[] } | undefined;
  await te.queue.boss.fetch(queue, { batchSize: BATCH, db: { executeSql: async (text: string, values?: unknown[]) => ((sent = { text, values: values ?? [] }), { rows: [] }) } });
  return consumerFetch(sent!.text, sent!.values, { tail: startClaimsInFetch({ id: "plan-worker", version: "plan-1" }, te.engine.clock.now()) });
}

/** The plan of `statement`, run and rolled back: as planned for its values, or the generic plan a prepared statement may settle on. */
async function plan(statement: { text: string; values: unknown[] }, generic: boolean): Promise<string> {
  const client = await te.db.pool.connect();
  try {
    await client.query("BEGIN");
    let explained: string;
    if (generic) {
      await client.query(`PREPARE fetch_with_claims AS ${statement.text}`);
      await client.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
      const literals = statement.values.map((v) => client.escapeLiteral(v instanceof Date ? v.toISOString() : String(v)));
      explained = `EXPLAIN (ANALYZE, COSTS OFF) EXECUTE fetch_with_claims(${literals.join(", ")})`;
    } else explained = `EXPLAIN (ANALYZE, COSTS OFF) ${statement.text}`;
    const { rows } = await client.query<{ "QUERY PLAN": string }>(explained, generic ? [] : statement.values);
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("ROLLBACK");
    if (generic) await client.query("DEALLOCATE ALL");
    client.release();
  }
}

describe("a start queue's fetch with its claims", () => {
  for (const generic of [false, true]) {
    it(`claims a full batch without a join comparing every job with every other (${generic ? "generic plan, as prepared" : "planned for its values"})`, async () => {
      const { rows: queues } = await te.db.pool.query<{ queue_name: string }>(`SELECT DISTINCT queue_name FROM runs WHERE environment_id = $1`, [te.env.id]);
      const explained = await plan(await fetchStatement(startQueueName(te.env.id, queues[0]!.queue_name)), generic);
      // The statement did claim the batch…
      expect(explained).toMatch(new RegExp(`Update on runs r\\S* \\(actual time=[\\d.]+\\.\\.[\\d.]+ rows=${BATCH}`));
      // …and no join threw away more rows than a batch holds (a quadratic one: 200 × 199).
      const removed = [...explained.matchAll(/Rows Removed by Join Filter: (\d+)/g)].map((m) => Number(m[1]));
      expect(Math.max(0, ...removed)).toBeLessThan(BATCH);
    });
  }
});
