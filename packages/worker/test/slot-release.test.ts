// A slot is for running task code: it is free again as soon as the code is done, while the writes
// that record how the run ended are still under way (the next fetch overlaps them).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const gates = new Map<string, () => void>();

const gated = task({
  id: "gated",
  run: async (payload: { gate: boolean }, { ctx }) => {
    if (payload.gate) await new Promise<void>((resolve) => gates.set(ctx.run.id, resolve));
    return "done";
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [gated], { concurrency: 1, pollIntervalMs: 60_000, timerMaxSleepMs: 60_000 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("worker slots", () => {
  it("start the next run while the previous run's ending is still being written", async () => {
    const first = await triggerRun(te.engine, te.env, "gated", { gate: true });
    await eventually(async () => gates.has(first.id));
    const second = await triggerRun(te.engine, te.env, "gated", { gate: false });

    // Hold the first run's row: the write that records its ending waits behind this lock.
    const blocker = await te.db.pool.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("SELECT id FROM runs WHERE id = $1 FOR UPDATE", [first.id]);
      const secondFinished = tw.worker.events.next("runFinished", (e) => e.runId === second.id);
      gates.get(first.id)!();
      // Concurrency 1, and the first run is not finished (its write is blocked): the second run
      // still gets the slot, because the first run's code is done.
      await secondFinished;
      expect((await getRunRow(te, second.id)).status).toBe("COMPLETED");
      expect((await getRunRow(te, first.id)).status).toBe("EXECUTING");
      await blocker.query("COMMIT");
    } finally {
      blocker.release();
    }
    await eventually(async () => (await getRunRow(te, first.id)).status === "COMPLETED");
  });
});
