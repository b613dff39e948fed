// Canceling a run while it executes: the cancel service (as the API calls it) NOTIFYs the worker,
// which aborts the task's signal; nothing the task does afterwards is recorded for the run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, triggerRun } from "@svc/runtime/engine";
import { step, task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;

interface Observed {
  waiting?: boolean;
  aborted?: boolean;
  reason?: string;
  stepAfterAbortRan?: boolean;
  returnedAfterAbort?: boolean;
}
const observed = new Map<string, Observed>();

const listens = task({
  id: "listens",
  run: async (_payload: unknown, { ctx, signal }) => {
    const seen: Observed = {};
    observed.set(ctx.run.id, seen);
    await step.run("before", () => "recorded");
    try {
      seen.waiting = true;
      await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    } catch (error) {
      seen.aborted = signal.aborted;
      seen.reason = (error as Error).message;
      // Work after the abort: must not reach the ledger, nor become the run's output.
      void step.run("after-abort", () => (seen.stepAfterAbortRan = true));
      seen.returnedAfterAbort = true;
      return "finished anyway";
    }
  },
});

const ignores = task({
  id: "ignores",
  run: async (_payload: unknown, { ctx }) => {
    observed.set(ctx.run.id, { waiting: true });
    await new Promise(() => {}); // never settles and never looks at the signal
  },
});
const quick = task({ id: "quick", run: async () => "quick" });

beforeAll(async () => {
  te = await startTestEngine();
  // A short lease: the check for lost executions runs with the lease renewals, every second.
  tw = await startTestWorker(te, [listens, ignores, quick], { concurrency: 1, leaseMs: 3000 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function ledgerKeys(runId: string): Promise<string[]> {
  const { rows } = await te.db.pool.query<{ step_key: string; target: string }>(`SELECT step_key, target FROM run_ledger WHERE run_id = $1 ORDER BY step_key`, [runId]);
  return rows.map((r) => `${r.step_key}:${r.target}`);
}

describe("cancel during execution", () => {
  it("aborts the task's signal, ends the run CANCELED and records nothing the task does after the abort", async () => {
    const { id } = await triggerRun(te.engine, te.env, "listens", {});
    await eventually(async () => observed.get(id)?.waiting);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    const result = await cancelRun(te.engine, te.env.id, id);
    expect(result.canceledRunIds).toEqual([id]);
    expect((await abandoned).reason).toBe("canceled");
    await eventually(async () => observed.get(id)?.returnedAfterAbort);
    const seen = observed.get(id)!;
    expect(seen.aborted).toBe(true);
    expect(seen.reason).toBe("run canceled");

    const run = await getRunRow(te, id);
    expect(run.status).toBe("CANCELED");
    expect(run.output).toBeNull();
    expect(run.finished_at).not.toBeNull();
    expect(await ledgerKeys(id)).toEqual(["#0:before"]);
    expect(seen.stepAfterAbortRan).toBeUndefined();
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [id]);
    expect(attempts.rows).toEqual([{ number: 1, status: "CANCELED" }]);
  });

  it("frees the worker's only slot even when the task ignores the signal and never settles", async () => {
    const { id } = await triggerRun(te.engine, te.env, "ignores", {});
    await eventually(async () => observed.get(id)?.waiting);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await cancelRun(te.engine, te.env.id, id);
    await abandoned;
    expect((await getRunRow(te, id)).status).toBe("CANCELED");
    // Concurrency is 1: the next run can only execute if the canceled one gave its slot back.
    const next = await triggerRun(te.engine, te.env, "quick", {});
    expect((await tw.worker.events.next("runFinished", (e) => e.runId === next.id)).status).toBe("COMPLETED");
  });

  it("treats a second cancel of a canceled run as a no-op", async () => {
    const { id } = await triggerRun(te.engine, te.env, "listens", {});
    await eventually(async () => observed.get(id)?.waiting);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await cancelRun(te.engine, te.env.id, id);
    await abandoned;
    const before = await getRunRow(te, id);
    expect(await cancelRun(te.engine, te.env.id, id)).toEqual({ id, canceledRunIds: [] });
    const after = await getRunRow(te, id);
    expect(after.status).toBe("CANCELED");
    expect(after.finished_at).toEqual(before.finished_at);
  });

  it("aborts the task when the cancel's NOTIFY never reaches the worker (the periodic check finds it)", async () => {
    const { id } = await triggerRun(te.engine, te.env, "listens", {});
    await eventually(async () => observed.get(id)?.waiting);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    // What cancelRun writes, without its NOTIFY: as if the worker's listener was reconnecting.
    await te.db.pool.query(`UPDATE runs SET status = 'CANCELED', finished_at = now() WHERE id = $1 AND status = 'EXECUTING'`, [id]);
    expect((await abandoned).reason).toBe("canceled");
    await eventually(async () => observed.get(id)?.returnedAfterAbort);
    expect(observed.get(id)).toMatchObject({ aborted: true, reason: "run canceled" });
    expect((await getRunRow(te, id)).output).toBeNull();
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [id]);
    expect(attempts.rows).toEqual([{ number: 1, status: "CANCELED" }]);
  });
});
