// Task settings the SDK's types allow but that are odd (an option spelled out as undefined, a
// maxDuration of weeks) must not strand a run or end it early.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const retries: string[] = [];
const finished = new Map<string, string>();
const calls = new Map<string, number>();
const count = (id: string) => {
  const n = (calls.get(id) ?? 0) + 1;
  calls.set(id, n);
  return n;
};

// What `retry: { minTimeoutInMs: options.minTimeout }` gives when the caller left it out.
const unsetTimeouts = task({
  id: "unset-timeouts",
  retry: { maxAttempts: 2, minTimeoutInMs: undefined, maxTimeoutInMs: undefined, factor: undefined, randomize: false },
  run: async (_: unknown, { ctx }) => {
    if (count(ctx.run.id) === 1) throw new Error("first attempt fails");
    return "second attempt";
  },
});
const unsetMaxAttempts = task({
  id: "unset-max-attempts",
  retry: { maxAttempts: undefined, minTimeoutInMs: 100, randomize: false },
  run: async () => {
    throw new Error("always");
  },
});

// Longer than setTimeout's limit (2^31 - 1 ms, about 24.8 days).
const THIRTY_DAYS_S = 30 * 86_400;
const monthLong = task({
  id: "month-long",
  maxDuration: THIRTY_DAYS_S,
  run: async () => {
    // Some real work: long enough for a timer that fires at once to win.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return "done";
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [unsetTimeouts, unsetMaxAttempts, monthLong], { timerLoop: false });
  tw.worker.events.on("runRetryScheduled", (e) => retries.push(e.runId));
  tw.worker.events.on("runFinished", (e) => finished.set(e.runId, e.status));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("a retry policy with settings left undefined", () => {
  it("uses the defaults for them: the retry is scheduled at a real time and runs", async () => {
    const { id } = await triggerRun(te.engine, te.env, "unset-timeouts", {});
    const scheduled = await tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    // The default backoff: 1 s after the first attempt.
    expect(scheduled.at.getTime() - clock.now().getTime()).toBe(1000);
    expect((await getRunRow(te, id)).available_at).not.toBeNull();
    clock.advance(1000);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
  });

  it("stops after the default number of attempts when maxAttempts is undefined", async () => {
    const { id } = await triggerRun(te.engine, te.env, "unset-max-attempts", {});
    for (let attempt = 1; attempt < 3; attempt++) {
      await eventually(async () => retries.filter((r) => r === id).length === attempt);
      clock.advance(60_000);
      await tw.worker.timers.tick();
    }
    await eventually(async () => finished.has(id));
    expect(finished.get(id)).toBe("FAILED");
    expect((await getRunRow(te, id)).attempt_number).toBe(3);
  });
});

describe("a maxDuration longer than setTimeout can wait", () => {
  it("does not time the run out at once", async () => {
    const fromTask = await triggerRun(te.engine, te.env, "month-long", {});
    const fromTrigger = await triggerRun(te.engine, te.env, "month-long", {}, { maxDuration: 2 * THIRTY_DAYS_S });
    await eventually(async () => finished.has(fromTask.id) && finished.has(fromTrigger.id));
    expect(finished.get(fromTask.id)).toBe("COMPLETED");
    expect(finished.get(fromTrigger.id)).toBe("COMPLETED");
  });
});
