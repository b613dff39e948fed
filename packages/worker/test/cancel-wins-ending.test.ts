// A cancel that commits between the moment task code returns and the moment its ending is written:
// the ending is fenced (the run is CANCELED) and the abort reaches code that has already finished,
// yet the attempt must still be closed, as CANCELED. Row-lock choreography: a third connection holds
// the run's row while the cancel, then the ending, queue behind it, in that order.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { blockedBackends, eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const gates = new Map<string, () => void>();

const gated = task({
  id: "cancel-wins-gated",
  run: async (_: unknown, { ctx }) => {
    await new Promise<void>((resolve) => gates.set(ctx.run.id, resolve));
    return "returned";
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [gated], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});


describe("a cancel committed after the code returned but before its ending", () => {
  it("ends the run CANCELED with its attempt recorded as CANCELED", async () => {
    const { id } = await triggerRun(te.engine, te.env, "cancel-wins-gated", {});
    await eventually(async () => gates.has(id));
    const holder = await te.db.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, [id]);
      const canceling = cancelRun(te.engine, te.env.id, id);
      await eventually(async () => (await blockedBackends(te)) === 1);
      const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
      gates.get(id)!(); // the code returns; its ending queues behind the cancel
      await eventually(async () => (await blockedBackends(te)) === 2);
      await holder.query("ROLLBACK");
      expect((await canceling).canceledRunIds).toEqual([id]);
      expect((await abandoned).reason).toBe("fenced");
    } finally {
      holder.release();
    }
    expect((await getRunRow(te, id)).status).toBe("CANCELED");
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [id]);
    expect(attempts.rows).toEqual([{ number: 1, status: "CANCELED" }]);
  });
});
