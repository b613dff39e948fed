// Rate limits as the worker loads and registers them: a queue() declared with a rateLimit gives it
// to every task naming the queue, by the queue or by its name; and a queue that gains a rate limit
// when a worker registers it moves its queued runs to the limited claim.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { moveRunsOfChangedQueues, triggerRun } from "@svc/runtime/engine";
import { loadTasks } from "../src/tasks/load-tasks.ts";
import { registerTasks, rateLimitOfTask } from "../src/tasks/register-tasks.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const CONFIG = fileURLToPath(new URL("./fixtures/rate-queues/svc.config.ts", import.meta.url));
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  await te?.close();
});

describe("loading and registering rate limits", () => {
  it("gives a queue()'s rateLimit to the tasks that name it, by the queue or by its name", async () => {
    const { tasks } = await loadTasks(CONFIG);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    expect(rateLimitOfTask(byId.get("welcome-sms")!)).toEqual({ limit: 5, periodMs: 60_000 });
    expect(rateLimitOfTask(byId.get("digest-sms")!)).toEqual({ limit: 5, periodMs: 60_000 });
    expect(rateLimitOfTask(byId.get("own-rate-sms")!)).toEqual({ limit: 1, periodMs: 500 });
    await registerTasks(te.db.pool, te.env.id, tasks, "v1", new Date());
    const { rows } = await te.db.pool.query(`SELECT task_identifier, queue_name, rate_limit, rate_period_ms FROM worker_tasks WHERE environment_id = $1 ORDER BY 1`, [te.env.id]);
    expect(rows).toEqual([
      { task_identifier: "digest-sms", queue_name: "sms", rate_limit: 5, rate_period_ms: 60_000 },
      { task_identifier: "own-rate-sms", queue_name: "task/own-rate-sms", rate_limit: 1, rate_period_ms: 500 },
      { task_identifier: "welcome-sms", queue_name: "sms", rate_limit: 5, rate_period_ms: 60_000 },
    ]);
  });

  it("moves the queued runs of a queue that gained a rate limit to its own claim, and back when it lost it", async () => {
    const run = await triggerRun(te.engine, te.env, "late-rated", {});
    const claimFromRuns = async () => (await te.db.pool.query(`SELECT claim_from_runs FROM runs WHERE id = $1`, [run.id])).rows[0].claim_from_runs;
    expect(await claimFromRuns()).toBe(true);
    await te.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, rate_limit, rate_period_ms) VALUES ($1, 'late-rated', 'task/late-rated', 'v1', 3, 1000)`,
      [te.env.id],
    );
    expect(await moveRunsOfChangedQueues(te.engine, te.env.id, ["task/late-rated"], new Date())).toBe(1);
    expect(await claimFromRuns()).toBe(false);
    await te.db.pool.query(`UPDATE worker_tasks SET rate_limit = NULL, rate_period_ms = NULL WHERE environment_id = $1 AND task_identifier = 'late-rated'`, [te.env.id]);
    expect(await moveRunsOfChangedQueues(te.engine, te.env.id, ["task/late-rated"], new Date())).toBe(1);
    expect(await claimFromRuns()).toBe(true);
  });
});
