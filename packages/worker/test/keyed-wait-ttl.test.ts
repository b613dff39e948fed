// Keyed waits whose idempotencyKeyTTL runs out while the run waits, or between its resumes: the
// TTL decides whether a *later attempt* may pass a wait by its key; it must never make a replay of
// the same attempt take a different path than the one it recorded.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const trail = new Map<string, string[]>();
const log = (runId: string, what: string) => trail.set(runId, [...(trail.get(runId) ?? []), what]);

// The README's own example: the sleep lasts as long as its key's default TTL (1h).
const coolOff = task({
  id: "cool-off",
  run: async (_: unknown, { ctx }) => {
    log(ctx.run.id, "start");
    await wait.for({ hours: 1 }, { idempotencyKey: "cool-off" });
    log(ctx.run.id, "after");
    return "done";
  },
});

// Attempt 1 passes the keyed sleep and fails; attempt 2 passes it by its key, then sleeps past the key's TTL.
const keyedThenLong = task({
  id: "keyed-then-long",
  retry: { maxAttempts: 2, minTimeoutInMs: 1000, randomize: false },
  run: async (_: unknown, { ctx }) => {
    const attempt = ctx.attempt.number;
    log(ctx.run.id, `${attempt}:start`);
    await wait.for({ seconds: 30 }, { idempotencyKey: "short", idempotencyKeyTTL: "10m" });
    if (attempt === 1) throw new Error("attempt 1 fails after its keyed wait");
    log(ctx.run.id, `${attempt}:long`);
    await wait.for({ hours: 1 });
    log(ctx.run.id, `${attempt}:end`);
    return attempt;
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [coolOff, keyedThenLong], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

/** The run's next event: finished (its status) or suspended again. */
function nextOutcome(id: string): Promise<string> {
  return new Promise((resolve) => {
    const offs = [
      tw.worker.events.on("runFinished", (e) => e.runId === id && done(e.status)),
      tw.worker.events.on("runSuspended", (e) => e.runId === id && done("SUSPENDED AGAIN")),
    ];
    const done = (outcome: string) => (offs.forEach((off) => off()), resolve(outcome));
  });
}

describe("keyed waits and their idempotencyKeyTTL", () => {
  it("finishes a keyed sleep that lasts as long as its key's TTL instead of sleeping again on every resume", async () => {
    const { id } = await triggerRun(te.engine, te.env, "cool-off", {});
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const ended = nextOutcome(id);
    clock.advance(3_600_000);
    await tw.worker.timers.tick();
    expect(await ended).toBe("COMPLETED");
    expect(trail.get(id)).toEqual(["start", "start", "after"]);
  });

  it("replays a keyed wait the way the attempt first met it, even when the key expires before a later resume", async () => {
    const { id } = await triggerRun(te.engine, te.env, "keyed-then-long", {});
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const retry = tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    clock.advance(30_000);
    await tw.worker.timers.tick();
    await retry;
    // Attempt 2 starts within the key's TTL: it passes the keyed sleep and suspends on the hour.
    const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    clock.advance(1000);
    await tw.worker.timers.tick();
    await suspended;
    expect(trail.get(id)!.filter((t) => t.startsWith("2:"))).toEqual(["2:start", "2:long"]);
    // It resumes after the key expired: the replay passes the keyed sleep again, as it did.
    const ended = nextOutcome(id);
    clock.advance(3_600_000);
    await tw.worker.timers.tick();
    expect(await ended).toBe("COMPLETED");
    expect(trail.get(id)!.filter((t) => t.startsWith("2:"))).toEqual(["2:start", "2:long", "2:start", "2:long", "2:end"]);
  });
});
