// One process can hold two executions of the same run: its own execution stalled (a CPU-bound
// task blocking the event loop past its lease or heartbeat), the run was taken over, and the same
// worker claimed the takeover. The newer execution owns the run; the older one, fenced, must not
// take the newer one's registration with it when it ends: a cancel (or the lost-execution check,
// or lease renewal) looks executions up by run id.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, completeToken, createToken, FakeClock, triggerRun } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const LEASE_MS = 3_600_000; // renewals never run during the test: the lease lapses when the clock says so
let te: TestEngine;
let tw: TestWorker;
const reached = new Set<string>();
const aborted = new Set<string>();
let releaseFirst!: () => void;
const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));

const stallsOnce = task({
  id: "stalls-once",
  retry: { maxAttempts: 3 },
  run: async (payload: { tokenId: string }, { ctx, signal }) => {
    await wait.forToken(payload.tokenId); // resumed by an offer or the fast path: a leased execution
    const attempt = ctx.attempt.number;
    signal.addEventListener("abort", () => aborted.add(`${ctx.run.id}:${attempt}`));
    reached.add(`${ctx.run.id}:${attempt}`);
    if (attempt === 1) await firstGate; // "stalled" until the test lets it end
    else await new Promise(() => {}); // the takeover runs until it is canceled
    return attempt;
  },
});

/** Each attempt, once resumed, runs until its signal aborts (a stall only the worker's check can end). */
const stallsForever = task({
  id: "stalls-forever",
  retry: { maxAttempts: 3 },
  run: async (payload: { tokenId: string }, { ctx, signal }) => {
    await wait.forToken(payload.tokenId);
    const attempt = ctx.attempt.number;
    reached.add(`${ctx.run.id}:${attempt}`);
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => (aborted.add(`${ctx.run.id}:${attempt}`), resolve())));
    return attempt;
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [stallsOnce, stallsForever], { timerLoop: false, leaseMs: LEASE_MS });
});
afterAll(async () => {
  await tw?.kill();
  await te?.close();
});

/**
 * A run of `taskId` suspended, resumed (attempt 1 reaches its stall), then its lease lapses and
 * this same worker claims the restart (attempt 2 reaches its stall too). `beforeLapse` runs once
 * the run id is known, before the lease lapses. Returns the run id.
 */
async function resumedThenTakenOver(taskId: string, beforeLapse: (id: string) => void = () => {}): Promise<string> {
  const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id;
  const { id } = await triggerRun(te.engine, te.env, taskId, { tokenId });
  await tw.worker.events.next("runSuspended", (e) => e.runId === id);
  await completeToken(te.engine, te.db.pool, tokenId, {});
  await eventually(async () => reached.has(`${id}:1`));
  beforeLapse(id);
  clock.advance(LEASE_MS + 1000);
  expect((await tw.worker.timers.tick())["lapsed-leases"]).toBe(1);
  await eventually(async () => reached.has(`${id}:2`));
  return id;
}

describe("a run taken over by the worker that still runs its stalled execution", () => {
  it("still reaches the newer execution with a cancel once the stalled one has ended", async () => {
    let firstEnded!: Promise<unknown>;
    const id = await resumedThenTakenOver("stalls-once", (runId) => {
      firstEnded = tw.worker.events.next("runAbandoned", (e) => e.runId === runId);
    });
    // The stalled execution ends (it was fenced: it writes nothing).
    releaseFirst();
    await firstEnded;

    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id && e.reason === "canceled", 5_000);
    await cancelRun(te.engine, te.env.id, id);
    await abandoned;
    expect(aborted.has(`${id}:2`)).toBe(true);
  });

  it("aborts the stalled execution once the worker's check sees the takeover, and only that one", async () => {
    const id = await resumedThenTakenOver("stalls-forever");

    // Attempt 1 still runs here, unaware; the check finds its claim gone and aborts its signal.
    const stalledEnded = tw.worker.events.next("runAbandoned", (e) => e.runId === id && e.reason === "canceled");
    await tw.worker.checkExecutions();
    await stalledEnded;
    expect(aborted.has(`${id}:1`)).toBe(true);
    expect(aborted.has(`${id}:2`)).toBe(false);
    // The takeover runs on and is still reached by a cancel.
    const canceled = tw.worker.events.next("runAbandoned", (e) => e.runId === id && e.reason === "canceled");
    await cancelRun(te.engine, te.env.id, id);
    await canceled;
    expect(aborted.has(`${id}:2`)).toBe(true);
  });
});
