// A run of a task no worker of its environment ever registered reads PENDING_VERSION (Trigger.dev
// v4's status for it) in runs.retrieve and runs.list, while the engine keeps it QUEUED; a worker
// that starts with the task runs it. Once registered, a task's queued runs read QUEUED, even with
// no live worker (the dashboard and svc dev flag those as unserved).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns, retrieveRun, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine } from "./harness.ts";

let te: TestEngine;
const late = task({ id: "deployed-later", run: async (payload: { n: number }) => payload.n * 2 });

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

const listed = async (statuses: ("QUEUED" | "PENDING_VERSION")[]) =>
  (await listRuns(te.engine.db, [te.env.id], { statuses, taskIdentifiers: ["deployed-later"] }, { keyset: null, direction: "desc", limit: 10 })).map((r) => r.id);

describe("PENDING_VERSION", () => {
  it("is how a queued run of a never-registered task reads until a worker with the task starts and runs it", async () => {
    const { id } = await triggerRun(te.engine, te.env, "deployed-later", { n: 21 });
    expect((await getRunRow(te, id)).status).toBe("QUEUED");
    expect((await retrieveRun(te.engine, te.env.id, id)).run.status).toBe("PENDING_VERSION");
    expect(await listed(["PENDING_VERSION"])).toEqual([id]);
    expect(await listed(["QUEUED"])).toEqual([]);

    const w = await startTestWorker(te, [late]);
    try {
      await eventually(async () => (await getRunRow(te, id)).status === "COMPLETED", 30_000);
      expect((await retrieveRun(te.engine, te.env.id, id)).run.status).toBe("COMPLETED");
    } finally {
      await w.stop();
    }
    // Registered once: a run queued with no live worker reads QUEUED (unserved, not pending a version).
    const { id: second } = await triggerRun(te.engine, te.env, "deployed-later", { n: 1 });
    expect((await retrieveRun(te.engine, te.env.id, second)).run.status).toBe("QUEUED");
    expect(await listed(["QUEUED"])).toEqual([second]);
    expect(await listed(["PENDING_VERSION"])).toEqual([]);
  });
});
