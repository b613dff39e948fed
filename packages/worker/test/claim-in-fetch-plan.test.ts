// The plan of a start queue's fetch with its claims: a full batch (200 jobs) is joined to its
// claims by hash, never by comparing every fetched job with every other. Twice a join of its CTEs
// went quadratic (a subquery per job, then nested loops over CTEs the planner took for one row)
// and batched triggers ran at a fraction of their speed while every test passed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { fetchByTupleIds, fetchWithTail, startQueueName } from "@svc/queue";
import { startClaimsInFetch } from "../src/execution/claim.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const BATCH = 200;
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
  for (let i = 0; i < BATCH; i++) await triggerRun(te.engine, te.env, "planned", { i });
  // As a busy queue's statistics often are: analyzed while it held no job.
  await te.db.pool.query(`ANALYZE pgboss.job_common`);
});
afterAll(async () => te?.close());

/** The statement a worker sends to fetch `queue`: pg-boss's text, rewritten, with the claims' tail. */
async function fetchStatement(queue: string) {
  let sent: { text: string; values: unknown[] } | undefined;
  await te.queue.boss.fetch(queue, { batchSize: BATCH, db: { executeSql: async (text: string, values?: unknown[]) => ((sent = { text, values: values ?? [] }), { rows: [] }) } });
  const text = fetchByTupleIds(sent!.text) ?? sent!.text;
  return fetchWithTail(text, sent!.values, startClaimsInFetch({ id: "plan-worker", version: "plan-1" }, te.engine.clock.now()))!;
}

describe("a start queue's fetch with its claims", () => {
  it("claims a full batch without a join comparing every job with every other", async () => {
    const { rows: queues } = await te.db.pool.query<{ queue_name: string }>(`SELECT DISTINCT queue_name FROM runs WHERE environment_id = $1`, [te.env.id]);
    const statement = await fetchStatement(startQueueName(te.env.id, queues[0]!.queue_name));
    const client = await te.db.pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${statement.text}`, statement.values);
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      // The statement did claim the batch…
      expect(plan).toMatch(new RegExp(`Update on runs r\\S* \\(actual time=[\\d.]+\\.\\.[\\d.]+ rows=${BATCH}`));
      // …and no join threw away more rows than a batch holds (a quadratic one: 200 × 199).
      const removed = [...plan.matchAll(/Rows Removed by Join Filter: (\d+)/g)].map((m) => Number(m[1]));
      expect(Math.max(0, ...removed)).toBeLessThan(BATCH);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
