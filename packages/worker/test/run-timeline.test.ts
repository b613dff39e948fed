import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, runTimeline, triggerRun, withTransaction, type TimelineEntry } from "@svc/runtime/engine";
import { forToken, step, task, triggerAndWait } from "@svc/runtime/sdk";
import { hideFromOffers, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

// Real runs on a worker, read back as timelines. The injected clock moves only between the
// phases the test awaits, so every moment the timeline shows is known exactly.

let te: TestEngine;
let tw: TestWorker;
const t0 = new Date("2026-11-22T10:00:00Z");
const clock = new FakeClock(t0);
const at = (ms: number) => new Date(t0.getTime() + ms);

const SCRIPT_STEP = "<script>alert(1)</script>";

const timelineChild = task({
  id: "timeline-child",
  run: async (payload: { tokenId: string }) => (await forToken(payload.tokenId)).ok,
});
const timelineParent = task({
  id: "timeline-parent",
  retry: { maxAttempts: 2, minTimeoutInMs: 1000, factor: 2, randomize: false },
  run: async (payload: { early: string; late: string; childToken: string }, { ctx }) => {
    await step.run(SCRIPT_STEP, () => 1);
    if (ctx.attempt.number === 1) throw new Error("first attempt fails");
    await forToken(payload.early); // completed before: continues inline
    await forToken(payload.late); // suspends
    const child = await triggerAndWait("timeline-child", { tokenId: payload.childToken }); // suspends
    await step.run("after", () => 2);
    return child.ok;
  },
});
const manySteps = task({
  id: "timeline-many-steps",
  run: async () => {
    for (let i = 0; i < 510; i++) await step.run(`s${i}`, () => i);
  },
});

async function newToken() {
  return (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
}
async function complete(id: string, output: unknown) {
  await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, id, output));
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [timelineChild, timelineParent, manySteps], { timerLoop: false });
  // Resumes through the NOTIFY fast path, whose claim stamps the worker's (injected) clock; an
  // offer's claim is stamped by the database's own now().
  await hideFromOffers(te, tw);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("runTimeline", () => {
  it("shows a retried run's attempts, steps, a wait that did not suspend, two that did, and its child run", async () => {
    const early = await newToken();
    await complete(early, { early: true });
    const late = await newToken();
    const childToken = await newToken();

    // Attempt 1 at t0: one step, then it throws; its retry is due 1 s later.
    const { id } = await triggerRun(te.engine, te.env, "timeline-parent", { early, late, childToken });
    await tw.worker.events.next("runRetryScheduled", (e) => e.runId === id);

    // Attempt 2 at t0+1 s: the step again (a new epoch), the early token inline, then it suspends on the late one.
    clock.advance(1000);
    const suspendedOnToken = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await tw.worker.timers.tick();
    await suspendedOnToken;

    // t0+6 s: the token completes; the run resumes, triggers its child and suspends on it; the child waits on its token.
    clock.advance(5000);
    const childSuspended = tw.worker.events.next("runSuspended", (e) => e.runId !== id);
    const suspendedOnChild = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await complete(late, { approved: true });
    const childId = (await childSuspended).runId;
    await suspendedOnChild;

    // t0+13 s: the child's token completes; the child ends, the parent resumes and completes.
    clock.advance(7000);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(childToken, "go");
    expect((await finished).status).toBe("COMPLETED");

    const timeline = (await runTimeline(te.db.pool, te.env.id, id))!;
    expect(timeline.run).toMatchObject({ id, taskIdentifier: "timeline-parent", status: "COMPLETED", createdAt: t0, startedAt: t0, finishedAt: at(13_000), parentRunId: null });
    expect(timeline.truncated).toBe(false);
    expect(timeline.entries.map((e) => [e.kind, e.label])).toEqual([
      ["attempt", "Attempt 1"],
      ["step", SCRIPT_STEP],
      ["attempt", "Attempt 2"],
      ["step", SCRIPT_STEP],
      ["wait", "wait.forToken"],
      ["wait", "wait.forToken"],
      ["wait", "triggerAndWait timeline-child"],
      ["child", "timeline-child"],
      ["step", "after"],
    ]);
    const [attempt1, step1, attempt2, step2, earlyWait, lateWait, childWait, child, after] = timeline.entries as [TimelineEntry, ...TimelineEntry[]];

    expect(attempt1).toMatchObject({ startedAt: t0, endedAt: t0, durationMs: 0, status: "FAILED", startEstimated: false });
    expect(attempt1!.detail).toMatchObject({ number: 1, errorMessage: "first attempt fails", retryAt: at(1000), workerId: tw.worker.id });
    expect(step1).toMatchObject({ status: "COMPLETED", endedAt: t0, detail: { stepKey: "#0", epoch: 0, ok: true } });

    // Attempt 2 suspended: only its last execution's start (the resume from the child) is
    // recorded, so its start is bounded by when its retry was due.
    expect(attempt2).toMatchObject({ startedAt: at(1000), endedAt: at(13_000), durationMs: 12_000, status: "COMPLETED", startEstimated: true });
    expect(attempt2!.detail).toMatchObject({ number: 2, errorMessage: null, lastExecutionStartedAt: at(13_000) });
    expect(step2).toMatchObject({ startedAt: at(1000), endedAt: at(1000), detail: { stepKey: "#0", epoch: 1 } });

    expect(earlyWait).toMatchObject({ startedAt: at(1000), endedAt: at(1000), durationMs: 0, status: "COMPLETED" });
    expect(earlyWait!.detail).toMatchObject({ type: "token", waitpointId: early, waitpointType: "MANUAL", suspended: false, resumedAt: null });
    expect(lateWait).toMatchObject({ startedAt: at(1000), endedAt: at(6000), durationMs: 5000, status: "COMPLETED" });
    expect(lateWait!.detail).toMatchObject({ type: "token", waitpointId: late, suspended: true, resumedAt: at(6000), stepKey: "#2", epoch: 1 });
    expect(childWait).toMatchObject({ startedAt: at(6000), endedAt: at(13_000), durationMs: 7000, status: "COMPLETED" });
    expect(childWait!.detail).toMatchObject({ type: "child", waitpointType: "RUN", target: "timeline-child", suspended: true, resumedAt: at(13_000), childRunId: childId });
    expect(child).toMatchObject({ startedAt: at(6000), endedAt: at(13_000), durationMs: 7000, status: "COMPLETED" });
    expect(child!.detail).toMatchObject({ runId: childId, taskIdentifier: "timeline-child", childStartedAt: at(6000) });
    // The step after the resume began, at the latest, when its wait was resolved.
    expect(after).toMatchObject({ startedAt: at(13_000), endedAt: at(13_000), startEstimated: true, detail: { name: "after", ok: true } });

    // The child's own timeline names its parent and root.
    const childTimeline = (await runTimeline(te.db.pool, te.env.id, childId))!;
    expect(childTimeline.run).toMatchObject({ parentRunId: id, rootRunId: id });
    expect(childTimeline.entries.map((e) => [e.kind, e.label, e.status])).toEqual([
      ["attempt", "Attempt 1", "COMPLETED"],
      ["wait", "wait.forToken", "COMPLETED"],
    ]);
  });

  it("shows a suspended run's attempt and wait as still going on", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "timeline-child", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const timeline = (await runTimeline(te.db.pool, te.env.id, id))!;
    expect(timeline.entries).toMatchObject([
      { kind: "attempt", status: "WAITING", endedAt: null, durationMs: null, detail: { number: 1, lastExecutionStartedAt: null } },
      { kind: "wait", status: "WAITING", endedAt: null, durationMs: null, detail: { waitpointId: tokenId, suspended: true, resumedAt: null } },
    ]);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId, null);
    await finished;
  });

  it("keeps the first 500 entries of a longer timeline and says it was cut", async () => {
    const { id } = await triggerRun(te.engine, te.env, "timeline-many-steps", {});
    await tw.worker.events.next("runFinished", (e) => e.runId === id, 60_000);
    const timeline = (await runTimeline(te.db.pool, te.env.id, id))!;
    expect(timeline.truncated).toBe(true);
    expect(timeline.entries).toHaveLength(500);
    expect(timeline.entries[0]).toMatchObject({ kind: "attempt", label: "Attempt 1" });
    expect(timeline.entries.slice(1, 4).map((e) => e.label)).toEqual(["s0", "s1", "s2"]);
    expect(timeline.entries.at(-1)!.label).toBe("s498");
  });

  it("is null for a run of another environment", async () => {
    const { id } = await triggerRun(te.engine, te.env, "timeline-child", { tokenId: await newToken() });
    expect(await runTimeline(te.db.pool, "env_elsewhere", id)).toBeNull();
    expect(await runTimeline(te.db.pool, te.env.id, "run_missing")).toBeNull();
  });
});
