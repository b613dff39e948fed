// Every time the engine writes comes from its injected clock, never from the database's now(): with
// a FakeClock decades away from the real time, the run and attempt rows hold exactly the clock's
// times (an attempt's started_at used to be database time while its finished_at was clock time).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRun } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const T0 = new Date("2001-02-03T04:05:06.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const clock = new FakeClock(T0);
let te: TestEngine;
let tw: TestWorker;

// Each execution takes one minute of clock time; attempt 1 fails and is retried.
const failsOnce = task({
  id: "fails-once",
  retry: { maxAttempts: 2, minTimeoutInMs: 1000, randomize: false },
  run: async (_: unknown, { ctx }) => {
    clock.advance(60_000);
    if (ctx.attempt.number === 1) throw new Error("attempt 1 fails");
    return ctx.attempt.number;
  },
});

const sleeps = task({
  id: "sleeps",
  run: async () => {
    await wait.for({ seconds: 30 });
    clock.advance(5_000);
    return "woke";
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [failsOnce, sleeps], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function attempts(runId: string): Promise<{ number: number; status: string; started_at: Date; finished_at: Date | null }[]> {
  const { rows } = await te.db.pool.query(`SELECT number, status, started_at, finished_at FROM run_attempts WHERE run_id = $1 ORDER BY number`, [runId]);
  return rows;
}

describe("times the engine writes come from its clock", () => {
  it("an attempt's started_at and finished_at, and the run's times, are the injected clock's", async () => {
    clock.set(T0);
    const retry = tw.worker.events.next("runRetryScheduled");
    const { id } = await triggerRun(te.engine, te.env, "fails-once", {});
    await retry;
    expect(await attempts(id)).toEqual([{ number: 1, status: "FAILED", started_at: at(0), finished_at: at(60_000) }]);
    let run = await getRunRow(te, id);
    expect(run.created_at).toEqual(at(0));
    expect(run.started_at).toEqual(at(0));
    expect(run.updated_at).toEqual(at(60_000));
    expect(run.available_at).toEqual(at(61_000));

    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    clock.advance(1_000);
    await tw.worker.timers.tick();
    await finished;
    expect(await attempts(id)).toEqual([
      { number: 1, status: "FAILED", started_at: at(0), finished_at: at(60_000) },
      { number: 2, status: "COMPLETED", started_at: at(61_000), finished_at: at(121_000) },
    ]);
    run = await getRunRow(te, id);
    expect(run.started_at).toEqual(at(0));
    expect(run.finished_at).toEqual(at(121_000));
    expect(run.updated_at).toEqual(at(121_000));
  });

  it("a run that suspends and resumes records the clock's times", async () => {
    clock.set(T0);
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "sleeps", {});
    await suspended;
    expect((await getRunRow(te, id)).updated_at).toEqual(at(0));

    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    clock.advance(30_000);
    await tw.worker.timers.tick();
    await finished;
    const run = await getRunRow(te, id);
    expect(run.status).toBe("COMPLETED");
    expect(run.finished_at).toEqual(at(35_000));
    expect(run.updated_at).toEqual(at(35_000));
    // One attempt row; its started_at is when its last execution (the resume) began.
    expect(await attempts(id)).toEqual([{ number: 1, status: "COMPLETED", started_at: at(30_000), finished_at: at(35_000) }]);
  });
});
