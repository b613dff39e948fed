// Delayed runs, TTL expiry and idempotency-key lifetimes, driven by a FakeClock and timers.tick().
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, FakeClock, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let echoCalls = 0;

const echo = task({
  id: "echo",
  run: async (payload: { n: number }) => {
    echoCalls++;
    return { n: payload.n };
  },
});
const broken = task({
  id: "broken",
  retry: { maxAttempts: 1 },
  run: async () => {
    throw new Error("always broken");
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [echo, broken], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("delay", () => {
  it("keeps a run triggered with delay 1h DELAYED and unqueued until the clock reaches it, then executes it", async () => {
    const triggeredAt = clock.now();
    const { id } = await triggerRun(te.engine, te.env, "echo", { n: 7 }, { delay: "1h" });
    const run = await getRunRow(te, id);
    expect(run.status).toBe("DELAYED");
    expect(run.delay_until!.getTime()).toBe(triggeredAt.getTime() + 3_600_000);

    clock.advance(3_600_000 - 1000);
    expect((await tw.worker.timers.tick())["delayed-runs"]).toBe(0);
    expect((await getRunRow(te, id)).status).toBe("DELAYED");

    clock.advance(1000);
    const started = tw.worker.events.next("runStarted", (e) => e.runId === id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect((await tw.worker.timers.tick())["delayed-runs"]).toBe(1);
    await started;
    expect((await finished).status).toBe("COMPLETED");
    const done = await getRunRow(te, id);
    expect(done.delay_until).toBeNull();
    expect(JSON.parse(done.output!).json).toEqual({ n: 7 });
  });

  it("accepts an absolute date as the delay", async () => {
    const at = new Date(clock.now().getTime() + 30_000);
    const { id } = await triggerRun(te.engine, te.env, "echo", { n: 8 }, { delay: at.toISOString() });
    const run = await getRunRow(te, id);
    expect(run.status).toBe("DELAYED");
    expect(run.delay_until!.getTime()).toBe(at.getTime());
    clock.advance(30_000);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await finished).status).toBe("COMPLETED");
  });
});

describe("ttl", () => {
  it("expires a run no worker started within its ttl of 1m, and not a moment earlier", async () => {
    const { id } = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { ttl: "1m" });
    const run = await getRunRow(te, id);
    expect(run.status).toBe("QUEUED");
    expect(run.expire_at!.getTime()).toBe(clock.now().getTime() + 60_000);
    clock.advance(59_999);
    expect((await tw.worker.timers.tick())["expiring-runs"]).toBe(0);
    expect((await getRunRow(te, id)).status).toBe("QUEUED");
    clock.advance(1);
    expect((await tw.worker.timers.tick())["expiring-runs"]).toBe(1);
    const expired = await getRunRow(te, id);
    expect(expired.status).toBe("EXPIRED");
    expect(expired.expired_at!.getTime()).toBe(clock.now().getTime());
    expect(expired.finished_at).not.toBeNull();
    expect(expired.attempt_number).toBe(0);
  });

  it("counts the ttl of a delayed run from the end of its delay", async () => {
    const { id } = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { delay: "10m", ttl: "1m" });
    const run = await getRunRow(te, id);
    expect(run.expire_at!.getTime()).toBe(run.delay_until!.getTime() + 60_000);
    clock.advance(10 * 60_000);
    await tw.worker.timers.tick();
    expect((await getRunRow(te, id)).status).toBe("QUEUED");
    clock.advance(60_000);
    await tw.worker.timers.tick();
    expect((await getRunRow(te, id)).status).toBe("EXPIRED");
  });
});

describe("idempotency keys", () => {
  it("returns the same run for the same key while it is live, and a new run once it EXPIRED", async () => {
    const first = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { idempotencyKey: "exp-key", ttl: "1m" });
    const again = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { idempotencyKey: "exp-key", ttl: "1m" });
    expect(again).toMatchObject({ id: first.id, isCached: true });
    clock.advance(60_000);
    await tw.worker.timers.tick();
    expect((await getRunRow(te, first.id)).status).toBe("EXPIRED");
    const fresh = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { idempotencyKey: "exp-key" });
    expect(fresh.isCached).toBe(false);
    expect(fresh.id).not.toBe(first.id);
    // The expired run keeps the user's key for display but no longer holds it.
    const old = await getRunRow(te, first.id);
    expect(old.idempotency_key).toBeNull();
    expect(old.idempotency_key_user).toBe("exp-key");
  });

  it("frees the key of a FAILED run: the same key makes a new run", async () => {
    const first = await triggerRun(te.engine, te.env, "broken", {}, { idempotencyKey: "fail-key" });
    expect((await tw.worker.events.next("runFinished", (e) => e.runId === first.id)).status).toBe("FAILED");
    const second = await triggerRun(te.engine, te.env, "broken", {}, { idempotencyKey: "fail-key" });
    expect(second.isCached).toBe(false);
    expect(second.id).not.toBe(first.id);
    await tw.worker.events.next("runFinished", (e) => e.runId === second.id);
  });

  it("keeps the key of a CANCELED run: the same key returns the canceled run", async () => {
    const first = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { idempotencyKey: "cancel-key" });
    const canceled = await cancelRun(te.engine, te.env.id, first.id);
    expect(canceled.canceledRunIds).toEqual([first.id]);
    const again = await triggerRun(te.engine, te.env, "nobody-has-this-task", {}, { idempotencyKey: "cancel-key" });
    expect(again).toMatchObject({ id: first.id, isCached: true });
    expect(again.run.status).toBe("CANCELED");
  });

  it("makes a new run once the key is past its idempotencyKeyTTL, even though the first run completed", async () => {
    const before = echoCalls;
    const first = await triggerRun(te.engine, te.env, "echo", { n: 1 }, { idempotencyKey: "ttl-key", idempotencyKeyTTL: "10m" });
    await tw.worker.events.next("runFinished", (e) => e.runId === first.id);
    clock.advance(10 * 60_000 - 1);
    const cached = await triggerRun(te.engine, te.env, "echo", { n: 2 }, { idempotencyKey: "ttl-key", idempotencyKeyTTL: "10m" });
    expect(cached).toMatchObject({ id: first.id, isCached: true });
    clock.advance(1);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId !== first.id);
    const fresh = await triggerRun(te.engine, te.env, "echo", { n: 3 }, { idempotencyKey: "ttl-key", idempotencyKeyTTL: "10m" });
    expect(fresh.isCached).toBe(false);
    expect(fresh.id).not.toBe(first.id);
    expect((await finished).runId).toBe(fresh.id);
    expect(echoCalls - before).toBe(2);
  });
});
