// Bulk actions in the worker: its timer loop works through them (woken by the action's NOTIFY),
// a chunk per pass: a bulk cancel aborts runs the worker is executing, a bulk replay's new runs
// are executed like any other.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBulkAction, retrieveBulkAction, triggerRun, type ChunkResult } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
/** Every chunk the worker's loop did, from its start. */
const chunks: ChunkResult[] = [];
const completion = (id: string) => eventually(async () => chunks.find((c) => c.bulkActionId === id && c.status === "COMPLETED"));

const hangs = task({
  id: "bulk-hangs",
  run: async (_payload: unknown, { signal }) => {
    await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  },
});
const doubles = task({ id: "bulk-doubles", run: async (payload: { n: number }) => payload.n * 2 });

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [hangs, doubles], { timerMaxSleepMs: 60_000 });
  tw.worker.events.on("bulkActionChunk", (chunk) => chunks.push(chunk));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function statusesOf(task: string): Promise<Record<string, number>> {
  const { rows } = await te.db.pool.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM runs WHERE task_identifier = $1 GROUP BY status`,
    [task],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe("the worker's timer loop and bulk actions", () => {
  it("cancels the runs it is executing, chunk after chunk, woken by the new action", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await triggerRun(te.engine, te.env, "bulk-hangs", {})).id);
    await eventually(async () => (await statusesOf("bulk-hangs")).EXECUTING === 5);
    // The loop sleeps up to a minute: only the action's NOTIFY can wake it in time.
    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", selection: { runIds: ids } });
    await completion(action.id);
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", succeeded: 5, failed: 0 });
    expect(await statusesOf("bulk-hangs")).toEqual({ CANCELED: 5 });
  });

  it("replays a filter's runs, and the replays run", async () => {
    const ids: string[] = [];
    for (let n = 1; n <= 3; n++) ids.push((await triggerRun(te.engine, te.env, "bulk-doubles", { n })).id);
    await eventually(async () => (await statusesOf("bulk-doubles")).COMPLETED === 3);
    const action = await createBulkAction(te.engine, te.env.id, { action: "REPLAY", selection: { filters: { taskIdentifiers: ["bulk-doubles"] } } });
    await completion(action.id);
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", total: 3, succeeded: 3 });
    await eventually(async () => (await statusesOf("bulk-doubles")).COMPLETED === 6);
    const { rows } = await te.db.pool.query<{ output: string }>(`SELECT output FROM runs WHERE task_identifier = 'bulk-doubles' AND NOT (id = ANY($1))`, [ids]);
    expect(rows.map((r) => JSON.parse(r.output).json).sort()).toEqual([2, 4, 6]);
  });
});
