// Wait idempotency keys across retried attempts, and code abandoned at suspension ("zombies").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const trail = new Map<string, string[]>();
const log = (runId: string, what: string) => trail.set(runId, [...(trail.get(runId) ?? []), what]);
const zombieCalls = new Map<string, number>();

const keyedRetry = task({
  id: "keyed-retry",
  retry: { maxAttempts: 2, minTimeoutInMs: 1000, randomize: false },
  run: async (payload: { tokenId: string }, { ctx }) => {
    const attempt = ctx.attempt.number;
    log(ctx.run.id, `${attempt}:cooldown`);
    await wait.for({ seconds: 30 }, { idempotencyKey: "cooldown" });
    log(ctx.run.id, `${attempt}:approval`);
    const approval = await wait.forToken<{ approved: boolean }>(payload.tokenId, { idempotencyKey: "approval" });
    log(ctx.run.id, `${attempt}:pause`);
    await wait.for({ seconds: 10 });
    log(ctx.run.id, `${attempt}:end`);
    if (attempt === 1) throw new Error("attempt 1 fails after its waits");
    return { approval: approval.unwrap(), attempt };
  },
});

const zombie = task({
  id: "zombie",
  run: async (payload: { tokenId: string }, { ctx }) => {
    // The timer wins the race while the run is suspended: the code after it is a zombie.
    await Promise.race([wait.forToken(payload.tokenId), new Promise((resolve) => setTimeout(resolve, 50))]);
    log(ctx.run.id, "after-race");
    const value = await step.run("zombie", () => {
      zombieCalls.set(ctx.run.id, (zombieCalls.get(ctx.run.id) ?? 0) + 1);
      return "recorded";
    });
    log(ctx.run.id, "after-step");
    return value;
  },
});

async function ledgerOf(runId: string) {
  const { rows } = await te.db.pool.query<{ epoch: number; step_key: string; kind: string; resolved: boolean }>(
    `SELECT epoch, step_key, kind, resolved FROM run_ledger WHERE run_id = $1 ORDER BY epoch, step_key`,
    [runId],
  );
  return rows;
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [keyedRetry, zombie], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("wait idempotency keys", () => {
  it("lets a retried attempt pass the keyed waits it already passed without suspending, and waits the unkeyed one again", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const suspensions: string[] = [];
    const off = tw.worker.events.on("runSuspended", (e) => suspensions.push(e.runId));
    const { id } = await triggerRun(te.engine, te.env, "keyed-retry", { tokenId });

    // Attempt 1 suspends three times: keyed sleep, keyed token, unkeyed sleep.
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    let next = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    clock.advance(30_000);
    await tw.worker.timers.tick();
    await next;
    next = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { approved: true }));
    await next;
    const retry = tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);
    clock.advance(10_000);
    await tw.worker.timers.tick();
    expect((await retry).attempt).toBe(1);
    expect(suspensions.filter((r) => r === id)).toHaveLength(3);

    // Attempt 2, after the retry fires: only the unkeyed sleep suspends.
    const attempt2 = tw.worker.events.next("runStarted", (e) => e.runId === id);
    next = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    clock.advance(1000);
    await tw.worker.timers.tick();
    expect((await attempt2).attempt).toBe(2);
    await next;
    expect(trail.get(id)!.filter((t) => t.startsWith("2:"))).toEqual(["2:cooldown", "2:approval", "2:pause"]);
    expect(suspensions.filter((r) => r === id)).toHaveLength(4);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    clock.advance(10_000);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
    off();

    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual({ approval: { approved: true }, attempt: 2 });
    // Keyed entries live outside the attempts' epochs; each attempt has its own unkeyed sleep.
    expect(await ledgerOf(id)).toEqual([
      { epoch: -1, step_key: "key:approval", kind: "token", resolved: true },
      { epoch: -1, step_key: "key:cooldown", kind: "datetime", resolved: true },
      { epoch: 0, step_key: "#0", kind: "datetime", resolved: true },
      { epoch: 1, step_key: "#0", kind: "datetime", resolved: true },
    ]);
    const sleeps = await te.db.pool.query<{ n: number }>(
      `SELECT count(DISTINCT waitpoint_id)::int AS n FROM run_ledger WHERE run_id = $1 AND kind = 'datetime'`,
      [id],
    );
    expect(sleeps.rows[0]!.n).toBe(3);
  });
});

describe("code abandoned at suspension", () => {
  it("cannot record a step after the run suspended, and the run replays and finishes normally once the token completes", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const { id } = await triggerRun(te.engine, te.env, "zombie", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    // The zombie reaches step.run after the 50 ms timer...
    await eventually(async () => trail.get(id)?.includes("after-race"));
    // ...and gets nowhere: its step function never runs and nothing reaches the ledger.
    const row = await getRunRow(te, id);
    expect(row.status).toBe("WAITING");
    expect(zombieCalls.get(id)).toBeUndefined();
    expect(await ledgerOf(id)).toEqual([{ epoch: 0, step_key: "#0", kind: "token", resolved: false }]);
    expect(trail.get(id)).toEqual(["after-race"]);

    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, "ok"));
    expect((await done).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("recorded");
    expect(zombieCalls.get(id)).toBe(1);
    expect(trail.get(id)).toEqual(["after-race", "after-race", "after-step"]);
    expect(await ledgerOf(id)).toEqual([
      { epoch: 0, step_key: "#0", kind: "token", resolved: true },
      { epoch: 0, step_key: "#1", kind: "step", resolved: true },
    ]);
  });
});
