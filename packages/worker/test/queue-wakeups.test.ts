// Claims of a limited queue move on through NOTIFY and the worker's own endings, never by waiting
// for a poll: these workers poll (and their timer loops sleep) up to a minute, so anything that
// relied on polling would time out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { forToken, task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const finishedIds = new Set<string>();
const releases = new Map<string, () => void>();

const serial = task({
  id: "serial",
  queue: { concurrencyLimit: 1 },
  run: async (payload: { tokenId?: string; gated?: boolean }, { ctx }) => {
    if (payload.tokenId) return (await forToken(payload.tokenId)).ok;
    if (payload.gated) await new Promise<void>((resolve) => releases.set(ctx.run.id, resolve));
    return "done";
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [serial], { pollIntervalMs: 60_000, timerMaxSleepMs: 60_000 });
  tw.worker.events.on("runFinished", (e) => finishedIds.add(e.runId));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("limited queue wake-ups", () => {
  it("starts the next run of a concurrencyLimit 1 queue as soon as the previous run is completed, without polling", async () => {
    const ids = (await Promise.all(Array.from({ length: 6 }, () => triggerRun(te.engine, te.env, "serial", {})))).map((r) => r.id);
    await eventually(async () => ids.every((id) => finishedIds.has(id)), 10_000);
    for (const id of ids) expect((await getRunRow(te, id)).status).toBe("COMPLETED");
  });

  it("resumes a run of a limited queue once the run holding the slot finishes, without polling", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const waiter = await triggerRun(te.engine, te.env, "serial", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === waiter.id);
    const holder = await triggerRun(te.engine, te.env, "serial", { gated: true });
    await eventually(async () => releases.has(holder.id));
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
    // The resume waits in the queue behind the holder (due, but the queue's claim finds no free
    // slot; the fast path leaves runs of limited queues alone).
    expect(await getRunRow(te, waiter.id)).toMatchObject({ status: "WAITING", resume_due_at: expect.any(Date) });
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === waiter.id, 10_000);
    releases.get(holder.id)!();
    expect((await resumed).via).toBe("claimed");
    await eventually(async () => finishedIds.has(waiter.id), 10_000);
    expect(JSON.parse((await getRunRow(te, waiter.id)).output!).json).toBe(true);
  });

});
