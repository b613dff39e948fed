// Every execution holds a lease on its run. When its lease lapses (the worker died, or stalled),
// the attempt it was running ended as a crash: it gets its CRASHED attempt row, and a run whose every attempt crashed ends CRASHED
// instead of being started again forever. Driven by a FakeClock and timers.tick(). The worker
// whose timers ended the run counts it in svc_runs_finished_total (a requeue is not an ending).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, completeToken, createToken, FakeClock, lapsedLeases, triggerRun } from "@svc/runtime/engine";
import { task, tasks, wait } from "@svc/runtime";
import { sample } from "../../api/test/prometheus-text.ts";
import { createWorkerMetrics, type WorkerMetrics } from "../src/metrics/worker-metrics.ts";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const LEASE_MS = 3_600_000; // no renewal during the test: a lease lapses only when the clock says so
let te: TestEngine;
let tw: TestWorker;
let metrics: WorkerMetrics;
const stalled = new Set<string>();

/**
 * Resumed after a wait, each attempt stalls forever (as a hung or dead worker would): only its
 * lease tells. Attempt 1 stalls after the first token; attempt 2 replays it, waits for the second
 * token and stalls after that one (only resumed executions hold leases).
 */
const stalls = task({
  id: "lapse-stalls",
  retry: { maxAttempts: 2 },
  run: async (payload: { tokenIds: string[] }, { ctx }) => {
    await wait.forToken(payload.tokenIds[0]!);
    if (ctx.attempt.number > 1) await wait.forToken(payload.tokenIds[1]!);
    stalled.add(`${ctx.run.id}:${ctx.attempt.number}`);
    await new Promise(() => {});
  },
});
const parent = task({
  id: "lapse-parent",
  run: async (payload: { tokenIds: string[] }) => {
    const result = await tasks.triggerAndWait("lapse-stalls", payload);
    return result.ok ? "child ok" : `child ${result.error && (result.error as { code?: string }).code}`;
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [stalls, parent], { timerLoop: false, leaseMs: LEASE_MS });
  metrics = createWorkerMetrics(tw.worker, { pool: tw.engine.db, clock, defaultMetrics: false });
});
afterAll(async () => {
  metrics?.stop();
  await tw?.kill();
  await te?.close();
});

async function attempts(runId: string) {
  const { rows } = await te.db.pool.query<{ number: number; status: string }>(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [runId]);
  return rows;
}

describe("a lapsed lease", () => {
  it("records the lapsed attempt as CRASHED, starts the next one, and ends the run CRASHED when attempts are used up", async () => {
    // Tokens that outlive the leases the test lets lapse (the default timeout is 10 minutes).
    const token = async () => (await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id;
    const tokenIds = [await token(), await token()];
    const { id: parentId } = await triggerRun(te.engine, te.env, "lapse-parent", { tokenIds });
    const id = await eventually(async () => (await te.db.pool.query(`SELECT id FROM runs WHERE parent_run_id = $1`, [parentId])).rows[0]?.id as string);
    await eventually(async () => (await getRunRow(te, id)).status === "WAITING");
    await completeToken(te.engine, te.db.pool, tokenIds[0]!, {});
    await eventually(async () => stalled.has(`${id}:1`));

    clock.advance(LEASE_MS + 1000);
    const takeover = tw.worker.events.next("runStarted", (e) => e.runId === id);
    expect((await tw.worker.timers.tick())["lapsed-leases"]).toBe(1);
    expect((await takeover).attempt).toBe(2);
    expect(await attempts(id)).toEqual([{ number: 1, status: "CRASHED" }]);
    expect(sample(await metrics.registry.metrics(), "svc_runs_finished_total", { status: "CRASHED" })).toBeUndefined();
    await eventually(async () => (await getRunRow(te, id)).status === "WAITING");
    await completeToken(te.engine, te.db.pool, tokenIds[1]!, {});
    await eventually(async () => stalled.has(`${id}:2`));

    // The second (last) attempt lapses too: no third start, the run ends and its parent resumes.
    clock.advance(LEASE_MS + 1000);
    const parentDone = tw.worker.events.next("runFinished", (e) => e.runId === parentId);
    expect((await tw.worker.timers.tick())["lapsed-leases"]).toBe(1);
    const run = await getRunRow(te, id);
    expect(run).toMatchObject({ status: "CRASHED", attempt_number: 2 });
    expect(run.finished_at).not.toBeNull();
    expect(run.error).toMatchObject({ code: "WORKER_CRASHED" });
    expect(await attempts(id)).toEqual([
      { number: 1, status: "CRASHED" },
      { number: 2, status: "CRASHED" },
    ]);
    expect((await parentDone).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, parentId)).output!).json).toBe("child CRASHED");
    // Counted once, by the timers that ended it; the parent's child run was counted when its code made it.
    const text = await metrics.registry.metrics();
    expect(sample(text, "svc_runs_finished_total", { status: "CRASHED" })).toBe(1);
    expect(sample(text, "svc_runs_finished_total", { status: "COMPLETED" })).toBe(1);
    expect(sample(text, "svc_runs_triggered_total")).toBe(1);
  });

  it("holds no lease once canceled, and clears a stale lease left on a run that stopped executing", async () => {
    const tokenIds = [(await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id, "unused"];
    const { id } = await triggerRun(te.engine, te.env, "lapse-stalls", { tokenIds });
    await eventually(async () => (await getRunRow(te, id)).status === "WAITING");
    await completeToken(te.engine, te.db.pool, tokenIds[0]!, {});
    await eventually(async () => stalled.has(`${id}:1`));
    expect((await getRunRow(te, id)).lease_expires_at).not.toBeNull();
    await cancelRun(te.engine, te.env.id, id);
    expect(await getRunRow(te, id)).toMatchObject({ status: "CANCELED", lease_expires_at: null, claim_token: null });
    expect(await lapsedLeases.nextDue(te.db.pool)).toBeNull();

    // A lease a canceled run kept (as before cancels cleared it) is cleared when it is due.
    await te.db.pool.query(`UPDATE runs SET lease_expires_at = $2 WHERE id = $1`, [id, clock.now()]);
    expect(await lapsedLeases.nextDue(te.db.pool)).toEqual(clock.now());
    await tw.worker.timers.tick();
    expect(await lapsedLeases.nextDue(te.db.pool)).toBeNull();
    expect((await getRunRow(te, id)).status).toBe("CANCELED");
  });
});
