// Ledger outcomes are data read back from the database: validated where a replay turns them into
// task code's values. One of another shape fails the run with an error that says so, instead of
// handing task code whatever the row holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;

const stepThenWait = task({
  id: "step-then-wait",
  retry: { maxAttempts: 1 },
  run: async (payload: { token: string }) => {
    const value = await step.run("one", () => ({ n: 1 }));
    await wait.forToken(payload.token);
    return value;
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [stepThenWait], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("ledger outcomes read back on replay", () => {
  it("fails the run with a clear error when a step's stored outcome has another shape", async () => {
    const token = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const { id } = await triggerRun(te.engine, te.env, "step-then-wait", { token });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    // Written by something other than svc: the value is not superjson text. (Raising the run's
    // ledger_version, as any writer of its ledger does: else the worker resumes the run from its
    // own copy of the ledger, which it keeps for offers, and never reads this row back.)
    const { rowCount } = await te.db.pool.query(`UPDATE run_ledger SET outcome = '{"ok":true,"value":42}' WHERE run_id = $1 AND kind = 'step'`, [id]);
    expect(rowCount).toBe(1);
    await te.db.pool.query(`UPDATE runs SET ledger_version = ledger_version + 1 WHERE id = $1`, [id]);
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, token, { ok: 1 }));
    expect((await finished).status).toBe("FAILED");
    const run = await getRunRow(te, id);
    expect(run.error).toMatchObject({ name: "StoredDataError" });
    expect((run.error as { message: string }).message).toMatch(/the ledger outcome of step .* does not have the shape svc stores: value: /);
  });
});
