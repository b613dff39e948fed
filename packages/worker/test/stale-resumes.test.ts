// A run resumes when what it waits on has ended, and only then. A resume signal that arrives late
// (a wake-up for a run that resumed another way, a NOTIFY for a run that already waits on
// something else) must not execute the run again: the code before its wait would run once more,
// for nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { claimFastResumes } from "../src/execution/claim.ts";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const calls = new Map<string, number>();

const sentinel = task({ id: "stale-sentinel", run: async () => "seen" });
const waiter = task({
  id: "stale-waiter",
  run: async (payload: { tokenId: string }, { ctx }) => {
    calls.set(ctx.run.id, (calls.get(ctx.run.id) ?? 0) + 1);
    return (await wait.forToken(payload.tokenId)).ok;
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [waiter, sentinel]);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function waitingRun(): Promise<{ id: string; tokenId: string }> {
  const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
  const suspended = tw.worker.events.next("runSuspended");
  const { id } = await triggerRun(te.engine, te.env, "stale-waiter", { tokenId });
  await suspended;
  return { id, tokenId };
}

describe("stale resume signals", () => {
  it("a wake-up for a run whose wait is still open claims nothing of it", async () => {
    const { id, tokenId } = await waitingRun();
    const run = await getRunRow(te, id);
    await te.engine.dispatcher.dispatch(te.db.pool, [{ kind: "resume", runId: id, environmentId: te.env.id, queueName: run.queue_name }], te.engine.clock.now());
    // A run the worker claims from `runs` (a TTL: not offered) after the wake-up: that claim's
    // statement, which takes resumes first, saw the waiting run and left it.
    const seen = await triggerRun(te.engine, te.env, "stale-sentinel", {}, { ttl: "1h" });
    await tw.worker.events.next("runFinished", (e) => e.runId === seen.id);
    expect((await getRunRow(te, id)).status).toBe("WAITING");
    expect(calls.get(id)).toBe(1);

    // The real completion still resumes it, once.
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await completeToken(te.engine, te.db.pool, tokenId, {});
    expect((await finished).status).toBe("COMPLETED");
    expect(calls.get(id)).toBe(2);
  });

  it("the fast path takes only runs whose resume is due (a late NOTIFY finds nothing to claim)", async () => {
    const { id } = await waitingRun();
    const claims = await claimFastResumes(te.db.pool, [{ runId: id, claimToken: "late-1" }], { id: "w", version: "v", tasks: ["stale-waiter"] }, new Date(), 15_000);
    expect(claims).toEqual([null]);
    // The batch form too (one NOTIFY can name many runs).
    const batch = await claimFastResumes(te.db.pool, [{ runId: id, claimToken: "late-2" }, { runId: "run_unknown", claimToken: "late-3" }], { id: "w", version: "v", tasks: ["stale-waiter"] }, new Date(), 15_000);
    expect(batch).toEqual([null, null]);
    expect((await getRunRow(te, id)).status).toBe("WAITING");

  });
});
