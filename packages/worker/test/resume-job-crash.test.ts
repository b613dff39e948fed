// A resume that came through a pg-boss job (a limited queue's resume, or one the NOTIFY fast path
// missed) and whose worker died: pg-boss delivers the same job again, and the claim takes the run
// over. That takeover is a crash like any other: the lost attempt is recorded CRASHED, the run
// goes on as the next attempt (replaying its ledger), and a run whose last attempt crashed ends
// CRASHED instead of being resumed again and again (until pg-boss gives the job up and the run is
// left EXECUTING for good).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let te: TestEngine;
let tw: TestWorker;
const stalled = new Set<string>();

// A limited queue: its resumes always go through a pg-boss job.
const stallsAfterResume = task({
  id: "job-resume-stalls",
  queue: { name: "job-resume-limited", concurrencyLimit: 1 },
  retry: { maxAttempts: 1 },
  run: async (payload: { tokenId: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    stalled.add(`${ctx.run.id}:${ctx.attempt.number}`);
    await new Promise(() => {}); // the worker "dies" here: only pg-boss's redelivery will tell
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [stallsAfterResume], { timerLoop: false });
});
afterAll(async () => {
  await tw?.kill();
  await te?.close();
});

describe("a resume job delivered again after its worker died", () => {
  it("records the lost attempt as CRASHED and, on the run's last attempt, ends it CRASHED instead of resuming it again", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id;
    const { id } = await triggerRun(te.engine, te.env, "job-resume-stalls", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await completeToken(te.engine, te.db.pool, tokenId, {});
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    await tw.worker.timers.tick(); // a limited queue's resume is handed to pg-boss at once
    expect((await resumed).via).toBe("job");
    await eventually(async () => stalled.has(`${id}:1`));

    // pg-boss redelivers the job (as its supervision does once the dead worker's heartbeat lapsed).
    const { job_id: jobId } = await getRunRow(te, id);
    const { rows } = await te.db.pool.query<{ name: string }>(`SELECT name FROM pgboss.job WHERE id = $1`, [jobId]);
    const outcome = Promise.race([
      tw.worker.events.next("runFinished", (e) => e.runId === id).then((e) => e.status as string),
      tw.worker.events.next("runResumed", (e) => e.runId === id).then(() => "RESUMED AGAIN"),
    ]);
    await te.queue.boss.fail(rows[0]!.name, jobId!, { message: "heartbeat lapsed" });
    expect(await outcome).toBe("CRASHED");

    const run = await getRunRow(te, id);
    expect(run).toMatchObject({ status: "CRASHED", attempt_number: 2 });
    expect(run.error).toMatchObject({ code: "WORKER_CRASHED" });
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [id]);
    expect(attempts.rows).toEqual([
      { number: 1, status: "CRASHED" },
      { number: 2, status: "CRASHED" },
    ]);
  });
});
