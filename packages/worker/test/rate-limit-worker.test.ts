// A worker under a rate limit, with time driven by an injected clock (the engine's and the worker's
// timers): runs over the rate stay QUEUED however often the worker claims, and start when the
// clock reaches their slot, woken by the worker's own timer (its poll is an hour here: nothing
// else wakes it). The worker
// counts each delayed run once (svc_runs_rate_delayed_total).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRuns } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { createWorkerMetrics } from "../src/metrics/worker-metrics.ts";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(T0);
let te: TestEngine;
let tw: TestWorker;

const sms = task({ id: "send-sms", rateLimit: { limit: 2, period: "1m" }, run: async () => "sent" });
const plain = task({ id: "plain", run: async () => "done" });

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [sms, plain], { timerLoop: false, timers: clock, pollIntervalMs: 3_600_000 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function runsOf(ids: string[]) {
  const { rows } = await te.db.pool.query<{ id: string; status: string; started_at: Date | null }>(
    `SELECT id, status, started_at FROM runs WHERE id = ANY($1) ORDER BY created_at, id`,
    [ids],
  );
  return rows;
}

describe("a worker with a rate-limited task", () => {
  it("registers the rate limit with its task", async () => {
    const { rows } = await te.db.pool.query(`SELECT queue_name, rate_limit, rate_period_ms FROM worker_tasks WHERE environment_id = $1 ORDER BY task_identifier`, [te.env.id]);
    expect(rows).toEqual([
      { queue_name: "task/plain", rate_limit: null, rate_period_ms: null },
      { queue_name: "task/send-sms", rate_limit: 2, rate_period_ms: 60_000 },
    ]);
  });

  it("starts the runs over the rate at their slot, not before, and counts each delayed run once", async () => {
    const metrics = createWorkerMetrics(tw.worker, { pool: te.db.pool, clock, defaultMetrics: false });
    const held = tw.worker.events.next("rateLimited", (e) => e.waiting === 3);
    const triggered = await triggerRuns(te.engine, te.env, Array.from({ length: 5 }, (_, i) => ({ taskIdentifier: "send-sms", payload: { i } })));
    const ids = triggered.map((r) => r.id);
    expect((await held).dueAt).toEqual(new Date(T0.getTime() + 60_000));
    await eventually(async () => (await runsOf(ids)).filter((r) => r.status === "COMPLETED").length === 2);

    // A run of a task without a rate limit is not held up by it; its trigger wakes the worker,
    // whose claims try the rate-limited queue too: with the clock a millisecond short of the slot,
    // nothing of it starts.
    clock.advance(59_999);
    const claimedAgain = tw.worker.events.next("rateLimited", (e) => e.waiting === 3);
    const [other] = await triggerRuns(te.engine, te.env, [{ taskIdentifier: "plain", payload: {} }]);
    await eventually(async () => (await runsOf([other!.id]))[0]!.status === "COMPLETED");
    expect((await claimedAgain).dueAt).toEqual(new Date(T0.getTime() + 60_000));
    expect((await runsOf(ids)).map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED", "QUEUED", "QUEUED", "QUEUED"]);

    // The slot: the worker's timer (the injected clock's) claims two more, the fifth waits for the next.
    clock.advance(1);
    await eventually(async () => (await runsOf(ids)).filter((r) => r.status === "COMPLETED").length === 4);
    const rows = await runsOf(ids);
    expect(rows.map((r) => r.started_at)).toEqual([T0, T0, new Date(T0.getTime() + 60_000), new Date(T0.getTime() + 60_000), null]);
    clock.advance(60_000);
    await eventually(async () => (await runsOf(ids)).every((r) => r.status === "COMPLETED"));

    const text = await metrics.registry.metrics();
    expect(text).toContain('svc_runs_rate_delayed_total{queue="task/send-sms"} 3');
    metrics.stop();
  });
});
