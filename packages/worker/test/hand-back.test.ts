// Environments whose workers have different tasks: a worker that claims a run of a task it lacks
// (a start job of a queue shared with another worker's tasks; a resume, whose pg-boss queue is the
// environment's) gives it back undone; runs claimed straight from `runs` are only its own tasks'. A start keeps its attempt number, TTL and "never started"; a resume stays a
// resume of the same attempt and is offered at once to the workers that have the task. The resume
// fast path only claims runs of the worker's own tasks. Driven by an injected clock and timer ticks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, fireAllDue, RESUME_GRACE_SECONDS, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { claimFastResumes, claimResume } from "../src/execution/claim.ts";
import { handBack, HAND_BACK_DELAY_MS } from "../src/execution/hand-back.ts";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let te: TestEngine;
const workers: TestWorker[] = [];
const beforeWait = new Map<string, number>();

// Worker "A" has only this task, on a queue that other workers' tasks use too.
const onShared = task({ id: "hb-on-shared", queue: { name: "hb-shared" }, run: async () => "a" });
// Worker "B" has this one.
const waiter = task({
  id: "hb-waiter",
  run: async (payload: { tokenId: string }, { ctx }) => {
    beforeWait.set(ctx.run.id, (beforeWait.get(ctx.run.id) ?? 0) + 1);
    const result = await wait.forToken<{ v: number }>(payload.tokenId);
    return { v: result.ok ? result.output.v : -1, attempt: ctx.attempt.number };
  },
});

// A task of a queue with a concurrencyLimit: its resumes take a slot of that queue.
const limitedWaiter = task({
  id: "hb-limited-waiter",
  queue: { name: "hb-limited", concurrencyLimit: 1 },
  run: async (payload: { tokenId: string }) => (await wait.forToken<{ v: number }>(payload.tokenId)).ok,
});

async function worker(tasks: Parameters<typeof startTestWorker>[1]) {
  const tw = await startTestWorker(te, tasks, { timerLoop: false });
  workers.push(tw);
  return tw;
}
async function stop(tw: TestWorker) {
  await tw.stop();
  workers.splice(workers.indexOf(tw), 1);
}
async function newToken() {
  return (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
}
/** When the run's resume is due (null: no resume pending). */
async function resumeDueAt(id: string): Promise<Date | null> {
  const { rows } = await te.db.pool.query<{ resume_due_at: Date | null }>(`SELECT resume_due_at FROM runs WHERE id = $1`, [id]);
  return rows[0]!.resume_due_at;
}
/** A finished run's output, decoded (stored as superjson text). */
async function outputOf(id: string) {
  return (JSON.parse((await getRunRow(te, id)).output!) as { json: unknown }).json;
}
/** A run of hb-waiter (or `taskId`) suspended on a fresh token by a worker that has the task (then stopped). */
async function waitingRun(taskId = "hb-waiter") {
  const b = await worker([waiter, limitedWaiter]);
  const tokenId = await newToken();
  const suspended = b.worker.events.next("runSuspended");
  const { id } = await triggerRun(te.engine, te.env, taskId, { tokenId });
  await suspended;
  await stop(b);
  return { id, tokenId };
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  for (const tw of workers) await tw.stop();
  await te?.close();
});

describe("a start handed back", () => {
  it("is never needed for a run claimed from runs: a worker claims only runs of its own tasks", async () => {
    const a = await worker([onShared]);
    const { id } = await triggerRun(te.engine, te.env, "hb-other", { n: 0 }, { queue: { name: "hb-shared" } });
    // Woken by the trigger and polling: nothing of its tasks to claim.
    await a.worker.timers.tick();
    expect(await getRunRow(te, id)).toMatchObject({ status: "QUEUED", attempt_number: 0, claim_token: null, job_id: null });
    await stop(a);
    await te.db.pool.query(`UPDATE runs SET status = 'CANCELED', finished_at = now() WHERE id = $1`, [id]);
  });

  it("returns to QUEUED as it was: same attempt number, its TTL, never started; the TTL still expires it", async () => {
    const a = await worker([onShared]);
    const handedBack = a.worker.events.next("runHandedBack");
    // A concurrency key: the run goes through a start job of the shared queue, which A fetches.
    const { id } = await triggerRun(te.engine, te.env, "hb-other", { n: 1 }, { queue: { name: "hb-shared" }, ttl: "10m", concurrencyKey: "k" });
    const before = await getRunRow(te, id);
    expect(before.expire_at).not.toBeNull();

    expect(await handedBack).toEqual({ runId: id, kind: "start" });
    const after = await getRunRow(te, id);
    expect(after.status).toBe("QUEUED");
    expect(after.attempt_number).toBe(before.attempt_number);
    expect(after.expire_at!.getTime()).toBe(before.expire_at!.getTime());
    expect(after.started_at).toBeNull();
    expect(after.claim_token).toBeNull();
    expect(after.available_at!.getTime()).toBe(clock.now().getTime() + HAND_BACK_DELAY_MS);

    // Nobody who has the task started it within its TTL: it expires, like any run that waited that long.
    // (Worker A stopped first: the same pass enqueues the run again, its retry time having passed,
    // and A's fetch of that job would lock the run for a moment, which the expiry's SKIP LOCKED
    // passes over until its next pass.)
    await stop(a);
    clock.advance(10 * 60_000);
    const ticked = await fireAllDue(te.engine, clock.now());
    expect(ticked["expiring-runs"]).toBe(1);
    const expired = await getRunRow(te, id);
    expect(expired.status).toBe("EXPIRED");
    expect(expired.started_at).toBeNull();
  });
});

describe("a resume handed back", () => {
  it("the fast path leaves runs of other workers' tasks alone", async () => {
    const { id, tokenId } = await waitingRun();
    // No worker runs: the completion only marks the resume due.
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { v: 1 }));
    expect(await resumeDueAt(id)).not.toBeNull();
    const lacking = await claimFastResumes(te.db.pool, [{ runId: id, claimToken: "hb-1" }], { id: "w", version: "v", tasks: ["hb-on-shared"] }, clock.now(), 15_000);
    expect(lacking).toEqual([null]);
    const batch = await claimFastResumes(te.db.pool, [{ runId: id, claimToken: "hb-2" }, { runId: "run_none", claimToken: "hb-3" }], { id: "w", version: "v", tasks: ["hb-on-shared"] }, clock.now(), 15_000);
    expect(batch).toEqual([null, null]);
    const row = await getRunRow(te, id);
    expect(row.status).toBe("WAITING");
    expect(row.claim_token).toBeNull();

    // A worker that has the task resumes it (here through the due-resume timer: nobody heard the NOTIFY).
    const b = await worker([waiter]);
    const finished = b.worker.events.next("runFinished", (e) => e.runId === id);
    clock.advance((RESUME_GRACE_SECONDS + 1) * 1000);
    await b.worker.timers.tick();
    expect((await finished).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({ v: 1, attempt: 1 });
    await stop(b);
  });

  it("stays WAITING on the same attempt, due again later, when a worker lacking the task takes its resume job", async () => {
    const { id, tokenId } = await waitingRun();
    const a = await worker([onShared]);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { v: 2 }));
    // Nobody took it by its due time: the timer loop hands it to pg-boss, and A gets the job.
    const handedBack = a.worker.events.next("runHandedBack", (e) => e.runId === id);
    clock.advance((RESUME_GRACE_SECONDS + 1) * 1000);
    await a.worker.timers.tick();
    expect(await handedBack).toEqual({ runId: id, kind: "resume" });
    const row = await getRunRow(te, id);
    expect(row.status).toBe("WAITING");
    expect(row.attempt_number).toBe(1);
    expect(row.claim_token).toBeNull();
    expect(row.job_id).toBeNull();
    expect((await resumeDueAt(id))!.getTime()).toBe(clock.now().getTime() + HAND_BACK_DELAY_MS);
    await stop(a);

    // When it is due again, a worker that has the task resumes it, on the same attempt.
    const b = await worker([waiter]);
    const finished = b.worker.events.next("runFinished", (e) => e.runId === id);
    clock.advance(HAND_BACK_DELAY_MS);
    await b.worker.timers.tick();
    expect((await finished).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({ v: 2, attempt: 1 });
    // The function ran twice (its start, its resume: replay re-runs it), never on the lacking worker.
    expect(beforeWait.get(id)).toBe(2);
    await stop(b);
  });

  it("is offered at once to a listening worker that has the task (NOTIFY), not left until it is due", async () => {
    const { id, tokenId } = await waitingRun();
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { v: 3 }));
    // Claimed through a resume job by a worker lacking the task (as the previous test's worker A did).
    const claimToken = "hb-lacking";
    const claim = await claimResume(te.db.pool, { runId: id, claimToken, workerId: "lacking", workerVersion: "v", jobId: "00000000-0000-4000-8000-000000000001", now: clock.now() });
    expect(claim).not.toBeNull();
    expect((await getRunRow(te, id)).status).toBe("EXECUTING");

    const b = await worker([waiter]);
    const resumed = b.worker.events.next("runResumed", (e) => e.runId === id);
    const finished = b.worker.events.next("runFinished", (e) => e.runId === id);
    expect(await handBack(te.engine, claim!, claimToken, "resume")).toBe(true);
    // No clock advance and no timer tick: the hand-back's NOTIFY woke B's fast path.
    expect((await resumed).via).toBe("fast-path");
    expect((await finished).status).toBe("COMPLETED");
    expect(await outputOf(id)).toEqual({ v: 3, attempt: 1 });

    // A second hand-back with the same claim token changes nothing (fenced).
    expect(await handBack(te.engine, claim!, claimToken, "resume")).toBe(false);
    expect((await getRunRow(te, id)).status).toBe("COMPLETED");
    await stop(b);
  });

  it("of a queue with a concurrencyLimit is not offered by NOTIFY: it resumes through its queue, when due", async () => {
    const { id, tokenId } = await waitingRun("hb-limited-waiter");
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { v: 4 }));
    const claimToken = "hb-lacking-limited";
    const claim = await claimResume(te.db.pool, { runId: id, claimToken, workerId: "lacking", workerVersion: "v", jobId: "00000000-0000-4000-8000-000000000002", now: clock.now() });
    expect(claim).not.toBeNull();

    const b = await worker([limitedWaiter]);
    const resumed = b.worker.events.next("runResumed", (e) => e.runId === id);
    const finished = b.worker.events.next("runFinished", (e) => e.runId === id);
    expect(await handBack(te.engine, claim!, claimToken, "resume")).toBe(true);
    expect((await getRunRow(te, id)).status).toBe("WAITING");
    // Due after the hand-back delay: the timer loop hands it to its queue, where it takes a slot.
    clock.advance(HAND_BACK_DELAY_MS);
    await b.worker.timers.tick();
    expect((await resumed).via).toBe("job");
    expect((await finished).status).toBe("COMPLETED");
    await stop(b);
  });
});
