// maxDuration: an execution that runs too long is stopped — its signal aborts, nothing it does
// afterwards is recorded — and the run ends TIMED_OUT with MAX_DURATION_EXCEEDED. The worker
// times it with injected timers: a FakeClock the test moves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";
import { collectTaskLogs } from "./task-logs.ts";

let te: TestEngine;
let tw: TestWorker;
const timers = new FakeClock(0);
const logs = collectTaskLogs();
interface Seen {
  aborted?: boolean;
  reason?: string;
  stepAfterAbortRan?: boolean;
  hanging?: boolean;
}
const observed = new Map<string, Seen>();

/** Never resolves; remembers what it saw when its signal was aborted and tries to keep working. */
async function hangs(runId: string, signal: AbortSignal) {
  const seen: Seen = { hanging: true };
  observed.set(runId, seen);
  try {
    await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  } catch (error) {
    seen.aborted = signal.aborted;
    seen.reason = (error as Error).message;
    void step.run("after-timeout", () => (seen.stepAfterAbortRan = true));
  }
  await new Promise(() => {});
}

const limited = task({ id: "limited-duration", maxDuration: 5, run: (_p: unknown, { ctx, signal }) => hangs(ctx.run.id, signal) });
const unlimited = task({ id: "unlimited-duration", run: (_p: unknown, { ctx, signal }) => hangs(ctx.run.id, signal) });
const waitsThenHangs = task({
  id: "waits-then-hangs",
  maxDuration: 10,
  run: async (payload: { token: string }, { ctx, signal }) => {
    await wait.forToken(payload.token);
    return hangs(ctx.run.id, signal);
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [limited, unlimited, waitsThenHangs], { timers, taskLogs: logs });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

/** Waits until the run's code is hanging (its execution's timer is armed before the code runs). */
async function hanging(id: string): Promise<void> {
  await eventually(async () => observed.get(id)?.hanging === true);
}

describe("maxDuration", () => {
  it("stops a task that never resolves once maxDuration has passed on the worker's timers: TIMED_OUT, signal aborted, nothing recorded after", async () => {
    const started = tw.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "limited-duration", {});
    await started;
    await hanging(id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    timers.advance(4_999);
    expect(timers.pendingTimers).toBe(1);
    timers.advance(1);
    expect((await finished).status).toBe("TIMED_OUT");
    const seen = observed.get(id)!;
    expect(seen.aborted).toBe(true);
    expect(seen.reason).toMatch(/maxDuration of 5s exceeded/);
    expect(seen.stepAfterAbortRan).toBeUndefined();

    const run = await getRunRow(te, id);
    expect(run.status).toBe("TIMED_OUT");
    expect(run.attempt_number).toBe(1);
    expect(run.error).toMatchObject({ code: "MAX_DURATION_EXCEEDED", message: "Run exceeded its maxDuration of 5s" });
    expect(run.finished_at).not.toBeNull();
    const ledger = await te.db.pool.query(`SELECT step_key FROM run_ledger WHERE run_id = $1`, [id]);
    expect(ledger.rows).toEqual([]);
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [id]);
    expect(attempts.rows).toEqual([{ number: 1, status: "TIMED_OUT" }]);
    expect(timers.pendingTimers).toBe(0);
  });

  it("applies a maxDuration given at trigger time to a task that declares none", async () => {
    const started = tw.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "unlimited-duration", {}, { maxDuration: 2 });
    await started;
    await hanging(id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    timers.advance(2_000);
    expect((await finished).status).toBe("TIMED_OUT");
    expect(observed.get(id)!.aborted).toBe(true);
    expect((await getRunRow(te, id)).error).toMatchObject({ code: "MAX_DURATION_EXCEEDED" });
  });

  it("counts each execution on its own: waiting does not count, a resumed run starts afresh (and is told so, once)", async () => {
    const token = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "waits-then-hangs", { token });
    await suspended;
    // The suspended execution's timer is gone: time passing while the run waits stops nothing.
    expect(timers.pendingTimers).toBe(0);
    timers.advance(60_000);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, token, {}));
    await resumed;
    await hanging(id);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    timers.advance(9_999);
    expect(timers.pendingTimers).toBe(1);
    timers.advance(1);
    expect((await finished).status).toBe("TIMED_OUT");
    expect(logs.notices()).toEqual(["max-duration-per-execution"]);
  });
});
