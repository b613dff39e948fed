// Several workers against one database share the work: every run executes exactly once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let workers: TestWorker[] = [];
const executions = new Map<string, number>();
const finishedBy = new Map<string, string>();

const shared = task({
  id: "shared",
  run: async (payload: { n: number; holdMs: number }, { ctx }) => {
    executions.set(ctx.run.id, (executions.get(ctx.run.id) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, payload.holdMs));
    return payload.n;
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  // Few slots each, so that neither worker can take the whole batch on its own.
  workers = [await startTestWorker(te, [shared], { concurrency: 4 }), await startTestWorker(te, [shared], { concurrency: 4 })];
  for (const w of workers) w.worker.events.on("runFinished", (e) => finishedBy.set(e.runId, w.worker.id));
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("several workers", () => {
  it("share 20 runs: all complete, each exactly once, and both workers executed some", async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, n) => triggerRun(te.engine, te.env, "shared", { n, holdMs: 50 })));
    const ids = runs.map((r) => r.id);
    await eventually(async () => ids.every((id) => finishedBy.has(id)), 30_000);

    const { rows } = await te.db.pool.query<{ id: string; status: string; output: string; attempt_number: number; worker_id: string }>(
      `SELECT id, status, output, attempt_number, worker_id FROM runs WHERE id = ANY($1)`,
      [ids],
    );
    expect(rows).toHaveLength(20);
    for (const row of rows) {
      expect(row.status).toBe("COMPLETED");
      expect(row.attempt_number).toBe(1);
      expect(JSON.parse(row.output).json).toBe(runs.findIndex((r) => r.id === row.id));
    }
    for (const id of ids) expect(executions.get(id)).toBe(1);

    const perWorker = new Map<string, number>();
    for (const id of ids) perWorker.set(finishedBy.get(id)!, (perWorker.get(finishedBy.get(id)!) ?? 0) + 1);
    expect([...perWorker.keys()].sort()).toEqual(workers.map((w) => w.worker.id).sort());
    // The run rows agree with the events about who executed them.
    for (const row of rows) expect(row.worker_id).toBe(finishedBy.get(row.id));
  });
});
