// svc_queue_is_limited, the one definition of "this run's queue has a concurrencyLimit": its
// answers, and that the planner inlines it where it is called (a SQL function Postgres does not
// inline is parsed and planned again by every statement that calls it, completions included).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun, type EngineDeps, type Environment } from "@svc/runtime/engine";
import { startTestEngine, type TestDatabase, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;

beforeAll(async () => {
  te = await startTestEngine();
  ({ db, engine, env } = te);
  await db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version)
     VALUES ($1, 'limited', 'task/limited', 2, 'v1'), ($1, 'free', 'task/free', NULL, 'v1')`,
    [env.id],
  );
});
afterAll(async () => te?.close());

/** The test as a run's insert makes it (insert-runs.ts), in a scalar subquery. */
const LIMITED = `(SELECT q.limited FROM svc_queue_is_limited(r.environment_id, r.queue_name) q)`;
const limitedOf = async (runId: string) =>
  (await db.pool.query<{ limited: boolean }>(`SELECT ${LIMITED} AS limited FROM runs r WHERE r.id = $1`, [runId])).rows[0]!.limited;

describe("svc_queue_is_limited", () => {
  it("is true for a run of a queue registered with a concurrencyLimit, false otherwise (also for a task no worker registered)", async () => {
    const limited = await triggerRun(engine, env, "limited", {});
    const free = await triggerRun(engine, env, "free", {});
    const unknown = await triggerRun(engine, env, "unknown", {});
    expect([await limitedOf(limited.id), await limitedOf(free.id), await limitedOf(unknown.id)]).toEqual([true, false, false]);
    // What each run was inserted with: claimed by its queue's claim, or by the plain one.
    const { rows } = await db.pool.query(`SELECT id, claim_from_runs FROM runs WHERE id = ANY($1)`, [[limited.id, free.id, unknown.id]]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.claim_from_runs]))).toEqual({ [limited.id]: false, [free.id]: true, [unknown.id]: true });
  });

  it("is true for a queue an operator paused or overrode (migration 0046), and the trigger's inline test agrees", async () => {
    await db.pool.query(
      `INSERT INTO queues (environment_id, name, paused, concurrency_limit_override) VALUES ($1, 'task/free', true, NULL), ($1, 'custom-q', false, 3), ($1, 'idle-q', false, NULL)`,
      [env.id],
    );
    const paused = await triggerRun(engine, env, "free", {});
    const overridden = await triggerRun(engine, env, "free", {}, { queue: { name: "custom-q" } });
    const idle = await triggerRun(engine, env, "free", {}, { queue: { name: "idle-q" } });
    expect([await limitedOf(paused.id), await limitedOf(overridden.id), await limitedOf(idle.id)]).toEqual([true, true, false]);
    const { rows } = await db.pool.query(`SELECT id, claim_from_runs FROM runs WHERE id = ANY($1)`, [[paused.id, overridden.id, idle.id]]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.claim_from_runs]))).toEqual({ [paused.id]: false, [overridden.id]: false, [idle.id]: true });
    // The limit the queue's claim counts: the override, else the declared limit, else none; and the pause.
    const limit = async (queue: string) => (await db.pool.query(`SELECT n, paused FROM svc_queue_limit($1, $2)`, [env.id, queue])).rows[0];
    expect(await limit("custom-q")).toEqual({ n: 3, paused: false });
    expect(await limit("task/free")).toEqual({ n: 2147483647, paused: true });
    expect(await limit("task/limited")).toEqual({ n: 2, paused: false });
    await db.pool.query(`UPDATE queues SET concurrency_limit_override = 5 WHERE environment_id = $1 AND name = 'task/free'`, [env.id]);
    expect(await limit("task/free")).toEqual({ n: 5, paused: true });
    await db.pool.query(`DELETE FROM queues WHERE environment_id = $1`, [env.id]);
  });

  it("is inlined by the planner, in an expression and in FROM", async () => {
    const plans = [
      `SELECT ${LIMITED} AS limited FROM runs r WHERE r.id = 'x'`,
      `SELECT q.limited FROM runs r CROSS JOIN LATERAL svc_queue_is_limited(r.environment_id, r.queue_name) q WHERE r.id = 'x'`,
    ];
    for (const sql of plans) {
      const { rows } = await db.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (VERBOSE) ${sql}`);
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan).toContain("worker_tasks");
      expect(plan).toContain("queues");
      expect(plan).not.toContain("svc_queue_is_limited");
    }
    // svc_queue_limit too, as the limited claim calls it.
    const { rows } = await db.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (VERBOSE) SELECT l.n, l.paused FROM svc_queue_limit('e', 'q') l`);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toContain("worker_tasks");
    expect(plan).not.toContain("svc_queue_limit");
  });
});
