import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let flakyCalls = 0;

const hello = task({
  id: "hello",
  run: async (payload: { name: string }, { ctx }) => ({ greeting: `Hello, ${payload.name}!`, attempt: ctx.attempt.number, when: new Date(0) }),
});
const flaky = task({
  id: "flaky",
  retry: { maxAttempts: 3, minTimeoutInMs: 1000, factor: 2, randomize: false },
  run: async () => {
    flakyCalls++;
    if (flakyCalls < 3) throw new Error(`boom ${flakyCalls}`);
    return "ok";
  },
});
let backoffCalls = 0;
const failsOnce = task({
  id: "fails-once",
  retry: { maxAttempts: 2, minTimeoutInMs: 60_000, randomize: false },
  run: async () => {
    if (++backoffCalls === 1) throw new Error("first attempt fails");
    return "second attempt";
  },
});
const alwaysFails = task({ id: "always-fails", retry: { maxAttempts: 2, minTimeoutInMs: 500, randomize: false }, run: async () => { throw new TypeError("nope"); } });

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [hello, flaky, failsOnce, alwaysFails], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("executing runs", () => {
  it("runs a triggered task to COMPLETED with its output", async () => {
    const { id } = await triggerRun(te.engine, te.env, "hello", { name: "Ada" });
    const finished = await tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect(finished.status).toBe("COMPLETED");
    const run = await getRunRow(te, id);
    expect(run.status).toBe("COMPLETED");
    expect(run.attempt_number).toBe(1);
    expect(run.worker_version).toBe("test-1");
    expect(JSON.parse(run.output!).json).toMatchObject({ greeting: "Hello, Ada!", attempt: 1 });
  });

  it("retries a failing task with the task's backoff, on the injected clock", async () => {
    const { id } = await triggerRun(te.engine, te.env, "flaky", {});
    const first = await tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    expect(first.at.getTime() - clock.now().getTime()).toBe(1000);
    expect((await getRunRow(te, id)).status).toBe("QUEUED");
    // Not due yet: nothing fires.
    expect((await tw.worker.timers.tick())["retrying-runs"]).toBe(0);
    clock.advance(1000);
    const secondScheduled = tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    expect((await tw.worker.timers.tick())["retrying-runs"]).toBe(1);
    const second = await secondScheduled;
    expect(second.attempt).toBe(2);
    expect(second.at.getTime() - clock.now().getTime()).toBe(2000);
    clock.advance(2000);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
    const run = await getRunRow(te, id);
    expect(run.attempt_number).toBe(3);
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [id]);
    expect(attempts.rows).toEqual([
      { number: 1, status: "FAILED" },
      { number: 2, status: "FAILED" },
      { number: 3, status: "COMPLETED" },
    ]);
  });

  it("fails the run with a serialized error once attempts are used up", async () => {
    const { id } = await triggerRun(te.engine, te.env, "always-fails", {});
    await tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    clock.advance(500);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("FAILED");
    const run = await getRunRow(te, id);
    expect(run.error).toMatchObject({ name: "TypeError", message: "nope" });
    expect(run.finished_at).not.toBeNull();
  });

  it("does not start a retry before its backoff when a stale wake-up arrives", async () => {
    const { id } = await triggerRun(te.engine, te.env, "fails-once", {});
    await tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    // A wake-up for the run in its backoff, then a run the worker claims from `runs` (a TTL: not
    // offered): that claim saw the run in its backoff and left it.
    const { queue_name } = await getRunRow(te, id);
    await te.engine.dispatcher.dispatch(te.db.pool, [{ kind: "start", runId: id, environmentId: te.env.id, queueName: queue_name }], te.engine.clock.now());
    const seen = await triggerRun(te.engine, te.env, "hello", {}, { ttl: "1h" });
    await tw.worker.events.next("runFinished", (e) => e.runId === seen.id);
    const run = await getRunRow(te, id);
    expect(run).toMatchObject({ status: "QUEUED", attempt_number: 1 });
    expect(backoffCalls).toBe(1);

    clock.advance(60_000);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
    expect((await getRunRow(te, id)).attempt_number).toBe(2);
  });
});
