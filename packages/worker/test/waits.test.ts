import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, transitionRun, triggerRun, withTransaction } from "@svc/runtime/engine";
import { forToken, step, task, triggerAndWait, waitFor, waitUntil, type WaitResult } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const sideEffects: Record<string, number> = {};
const bump = (key: string) => (sideEffects[key] = (sideEffects[key] ?? 0) + 1);

const approval = task({
  id: "approval",
  run: async (payload: { tokenId: string; key: string }) => {
    const before = await step.run("before", () => bump(`${payload.key}:before`));
    const result = await forToken<{ approved: boolean }>(payload.tokenId);
    bump(`${payload.key}:after`);
    return { before, result: result.ok ? result.output : { timedOut: result.error.message } };
  },
});
const unwrapping = task({
  id: "unwrapping",
  retry: { maxAttempts: 1 },
  run: async (payload: { tokenId: string }) => (await forToken(payload.tokenId)).unwrap(),
});
const sleeper = task({
  id: "sleeper",
  run: async (payload: { key: string }) => {
    await step.run("a", () => bump(`${payload.key}:a`));
    await waitFor({ seconds: 60 });
    await step.run("b", () => bump(`${payload.key}:b`));
    return "rested";
  },
});
const child = task({ id: "child", run: async (payload: { n: number }) => ({ doubled: payload.n * 2 }) });
const parent = task({
  id: "parent",
  run: async (payload: { n: number }) => {
    const result = await triggerAndWait<{ doubled: number }>("child", { n: payload.n });
    return result.unwrap();
  },
});
let flips = 0;
const nondeterministic = task({
  id: "nondeterministic",
  retry: { maxAttempts: 1 },
  run: async (payload: { a: string; b: string }) => {
    flips++;
    await forToken(flips === 1 ? payload.a : payload.b);
  },
});
const finallyCounter = task({
  id: "finally-counter",
  run: async (payload: { tokenId: string; key: string }) => {
    try {
      return (await forToken(payload.tokenId)).ok;
    } catch {
      bump(`${payload.key}:caught`);
      return "caught";
    } finally {
      bump(`${payload.key}:finally`);
    }
  },
});

/** The usual way to sleep until a moment: a date computed from the current time, anew on every replay. */
const untilComputed = task({
  id: "until-computed",
  run: async (payload: { key: string }) => {
    await waitUntil({ date: new Date(Date.now() + 60_000) });
    await step.run("after", () => bump(`${payload.key}:after`));
    return "woke";
  },
});

async function newToken(timeout = "10m") {
  return (await createToken(te.engine, te.env.id, { timeout })).waitpoint.id;
}

async function complete(id: string, output: unknown) {
  return withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, id, output));
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [approval, unwrapping, sleeper, child, parent, nondeterministic, finallyCounter, untilComputed], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("durable waits", () => {
  it("checkpoints at wait.forToken, frees the slot, and resumes with the output when completed", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "approval", { tokenId, key: "t1" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const waiting = await getRunRow(te, id);
    expect(waiting.status).toBe("WAITING");
    expect(waiting.claim_token).toBeNull();
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    await complete(tokenId, { approved: true });
    expect((await resumed).attempt).toBe(1);
    expect((await done).status).toBe("COMPLETED");
    const run = await getRunRow(te, id);
    expect(run.attempt_number).toBe(1);
    expect(JSON.parse(run.output!).json).toEqual({ before: 1, result: { approved: true } });
    expect(sideEffects["t1:before"]).toBe(1);
    expect(sideEffects["t1:after"]).toBe(1);
  });

  it("continues inline when the token was completed before the wait started", async () => {
    const tokenId = await newToken();
    await complete(tokenId, { approved: false });
    const { id } = await triggerRun(te.engine, te.env, "approval", { tokenId, key: "t2" });
    const suspended = tw.worker.events.next("runSuspended", (e) => e.runId === id, 60_000).then(() => "suspended");
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id).then(() => "finished");
    expect(await Promise.race([suspended, finished])).toBe("finished");
    expect(JSON.parse((await getRunRow(te, id)).output!).json.result).toEqual({ approved: false });
  });

  it("resumes with ok: false when the token times out, and unwrap() throws", async () => {
    const tokenA = await newToken("5m");
    const tokenB = await newToken("5m");
    // Listen before triggering: the two runs suspend in either order.
    const suspended = new Set<string>();
    const off = tw.worker.events.on("runSuspended", (e) => void suspended.add(e.runId));
    const a = await triggerRun(te.engine, te.env, "approval", { tokenId: tokenA, key: "t3" });
    const b = await triggerRun(te.engine, te.env, "unwrapping", { tokenId: tokenB });
    await eventually(async () => suspended.has(a.id) && suspended.has(b.id));
    off();
    const doneA = tw.worker.events.next("runFinished", (e) => e.runId === a.id);
    const doneB = tw.worker.events.next("runFinished", (e) => e.runId === b.id);
    clock.advance(5 * 60_000);
    await tw.worker.timers.tick();
    expect((await doneA).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, a.id)).output!).json.result.timedOut).toMatch(/timed out/);
    expect((await doneB).status).toBe("FAILED");
    expect((await getRunRow(te, b.id)).error).toMatchObject({ name: "WaitpointTimeoutError" });
  });

  it("sleeps with wait.for on the injected clock and replays steps exactly once", async () => {
    const { id } = await triggerRun(te.engine, te.env, "sleeper", { key: "s1" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const { rows } = await te.db.pool.query(`SELECT w.timeout_at FROM run_ledger l JOIN waitpoints w ON w.id = l.waitpoint_id WHERE l.run_id = $1`, [id]);
    expect(rows[0].timeout_at.getTime()).toBe(clock.now().getTime() + 60_000);
    clock.advance(59_000);
    expect((await tw.worker.timers.tick())["due-waitpoints"]).toBe(0);
    clock.advance(1_000);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
    expect(sideEffects["s1:a"]).toBe(1);
    expect(sideEffects["s1:b"]).toBe(1);
  });

  it("wait.until with a date computed from the current time resumes at the recorded date (the replay computes another)", async () => {
    const { id } = await triggerRun(te.engine, te.env, "until-computed", { key: "u1" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const { rows } = await te.db.pool.query(`SELECT w.timeout_at FROM run_ledger l JOIN waitpoints w ON w.id = l.waitpoint_id WHERE l.run_id = $1`, [id]);
    clock.advance(rows[0].timeout_at.getTime() - clock.now().getTime());
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await tw.worker.timers.tick();
    expect((await done).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("woke");
    expect(sideEffects["u1:after"]).toBe(1);
  });

  it("triggerAndWait resumes the parent with the child's output", async () => {
    const { id } = await triggerRun(te.engine, te.env, "parent", { n: 21 });
    const done = await tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect(done.status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual({ doubled: 42 });
    const children = await te.db.pool.query(`SELECT status, parent_run_id, trigger_function, depth FROM runs WHERE parent_run_id = $1`, [id]);
    expect(children.rows).toEqual([{ status: "COMPLETED", parent_run_id: id, trigger_function: "triggerAndWait", depth: 1 }]);
  });

  it("fails with a nondeterminism error naming what the ledger recorded and what the code asked for", async () => {
    const a = await newToken();
    const b = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "nondeterministic", { a, b });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(a, {});
    expect((await done).status).toBe("FAILED");
    const error = (await getRunRow(te, id)).error as { message: string };
    expect(error.message).toContain(`token "${a}"`);
    expect(error.message).toContain(`token "${b}"`);
  });

  it("does not let try/catch/finally around a wait swallow the suspension or run twice", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "finally-counter", { tokenId, key: "f1" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    expect(sideEffects["f1:finally"]).toBeUndefined();
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId, "yes");
    expect((await done).status).toBe("COMPLETED");
    expect(sideEffects["f1:finally"]).toBe(1);
    expect(sideEffects["f1:caught"]).toBeUndefined();
  });

  it("cancels a WAITING run; completing its token later does nothing to it", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "approval", { tokenId, key: "c1" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await transitionRun(te.db.pool, id, "CANCELED", te.engine.clock.now(), { from: ["WAITING"] });
    const result = await complete(tokenId, { approved: true });
    expect(result.changed).toBe(true);
    expect((await getRunRow(te, id)).status).toBe("CANCELED");
    expect(sideEffects["c1:after"]).toBeUndefined();
  });
});

export type { WaitResult };
