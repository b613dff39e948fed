// A child run of triggerAndWait that expires (its TTL passed before any worker started it) ends
// like any other child: the waiting parent resumes with a failed result instead of waiting forever.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task, tasks } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;

const parentOfExpiring = task({
  id: "parent-of-expiring",
  run: async () => {
    // No worker has this task: the child waits in its queue until its TTL passes.
    const result = await tasks.triggerAndWait("not-deployed", {}, { ttl: "1s" });
    return result.ok ? "ok" : `child ended: ${(result.error as { message?: string }).message}`;
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [parentOfExpiring]);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("a child that expires before it starts", () => {
  it("resumes the parent with a failed result", async () => {
    const { id } = await triggerRun(te.engine, te.env, "parent-of-expiring", {});
    const finished = await tw.worker.events.next("runFinished", (e) => e.runId === id, 15_000);
    expect(finished.status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("child ended: child run ended EXPIRED");
    const { rows } = await te.db.pool.query(`SELECT status FROM runs WHERE task_identifier = 'not-deployed'`);
    expect(rows).toEqual([{ status: "EXPIRED" }]);
  });
});
