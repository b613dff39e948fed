// Queue concurrency limits across two in-process workers (each with its own pool).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { forToken, task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let workers: TestWorker[] = [];

interface Interval {
  runId: string;
  key: string;
  start: bigint;
  end: bigint;
}
const intervals: Interval[] = [];
const inFlight = new Map<string, number>();
const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records when each execution starts and ends (hrtime), per concurrency key. */
async function measured<T>(runId: string, key: string, body: () => Promise<T>): Promise<T> {
  const start = process.hrtime.bigint();
  inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
  try {
    return await body();
  } finally {
    inFlight.set(key, inFlight.get(key)! - 1);
    intervals.push({ runId, key, start, end: process.hrtime.bigint() });
  }
}

const limited = task({
  id: "limited",
  queue: { concurrencyLimit: 1 },
  run: async (payload: { holdMs: number }, { ctx }) => measured(ctx.run.id, "limited", () => hold(payload.holdMs)),
});

/** Holds until a run of the other key is executing too (or gives up after 5 s). */
async function holdForPartner(key: string, other: string): Promise<boolean> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if ((inFlight.get(other) ?? 0) > 0) {
      await hold(20);
      return true;
    }
    await hold(5);
  }
  return false;
}
const keyed = task({
  id: "keyed",
  queue: { name: "keyed-queue", concurrencyLimit: 1 },
  run: async (payload: { key: string; other: string }, { ctx }) => measured(ctx.run.id, payload.key, () => holdForPartner(payload.key, payload.other)),
});

/** A limit-1 queue whose runs either wait on a token first or hold until the test releases them. */
const releases = new Map<string, () => void>();
const gated = task({
  id: "gated",
  queue: { concurrencyLimit: 1 },
  run: async (payload: { tokenId?: string }, { ctx }) => {
    if (payload.tokenId) await forToken(payload.tokenId);
    return measured(ctx.run.id, "gated", () => (payload.tokenId ? hold(50) : new Promise<void>((resolve) => releases.set(ctx.run.id, resolve))));
  },
});

function overlaps(list: Interval[]): [Interval, Interval][] {
  const sorted = [...list].sort((a, b) => (a.start < b.start ? -1 : 1));
  const found: [Interval, Interval][] = [];
  for (let i = 1; i < sorted.length; i++) if (sorted[i]!.start < sorted[i - 1]!.end) found.push([sorted[i - 1]!, sorted[i]!]);
  return found;
}

const finishedIds = new Set<string>();
/** Resolves once every run finished on either worker (listeners are attached before any trigger). */
async function finished(runIds: string[]) {
  await eventually(async () => runIds.every((id) => finishedIds.has(id)), 30_000);
}

beforeAll(async () => {
  te = await startTestEngine();
  // Very short polls on top of NOTIFY: both workers keep asking for work, so the limit is contended
  // (two fetches at the same moment used to both see the group idle and both claim).
  workers = [
    await startTestWorker(te, [limited, keyed, gated], { pollIntervalMs: 5 }),
    await startTestWorker(te, [limited, keyed, gated], { pollIntervalMs: 5 }),
  ];
  for (const w of workers) w.worker.events.on("runFinished", (e) => finishedIds.add(e.runId));
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("queue concurrencyLimit across workers", () => {
  it("never executes two runs of a queue with concurrencyLimit 1 at once, across two workers, and completes them all", async () => {
    const runs = await Promise.all(Array.from({ length: 6 }, () => triggerRun(te.engine, te.env, "limited", { holdMs: 40 })));
    const ids = runs.map((r) => r.id);
    await finished(ids);
    const mine = intervals.filter((i) => ids.includes(i.runId));
    expect(mine).toHaveLength(6);
    expect(overlaps(mine)).toEqual([]);
    for (const id of ids) expect((await getRunRow(te, id)).status).toBe("COMPLETED");
  });

  it("holds the limit under contention: 40 short runs while both workers poll every 5 ms", async () => {
    const runs = await Promise.all(Array.from({ length: 40 }, () => triggerRun(te.engine, te.env, "limited", { holdMs: 2 })));
    const ids = runs.map((r) => r.id);
    await finished(ids);
    const mine = intervals.filter((i) => ids.includes(i.runId));
    expect(mine).toHaveLength(40);
    expect(overlaps(mine)).toEqual([]);
  });

  it("runs two concurrency keys in parallel but never two runs of one key at once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await triggerRun(te.engine, te.env, "keyed", { key: "a", other: "b" }, { concurrencyKey: "a" })).id);
      ids.push((await triggerRun(te.engine, te.env, "keyed", { key: "b", other: "a" }, { concurrencyKey: "b" })).id);
    }
    await finished(ids);
    const mine = intervals.filter((i) => ids.includes(i.runId));
    expect(mine).toHaveLength(6);
    expect(overlaps(mine.filter((i) => i.key === "a"))).toEqual([]);
    expect(overlaps(mine.filter((i) => i.key === "b"))).toEqual([]);
    // Across keys the runs did overlap: each found a partner of the other key executing.
    expect(overlaps(mine).length).toBeGreaterThan(0);
    const outputs = await Promise.all(ids.map(async (id) => JSON.parse((await getRunRow(te, id)).output!).json as boolean));
    expect(outputs.filter(Boolean).length).toBeGreaterThanOrEqual(4);
  });

  it("counts a resumed run against its queue's limit: it waits for the executing run instead of overlapping it", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const waiter = await triggerRun(te.engine, te.env, "gated", { tokenId });
    await Promise.race(workers.map((w) => w.worker.events.next("runSuspended", (e) => e.runId === waiter.id)));
    const holder = await triggerRun(te.engine, te.env, "gated", {});
    await eventually(async () => releases.has(holder.id));
    const resumed = Promise.race(workers.map((w) => w.worker.events.next("runResumed", (e) => e.runId === waiter.id)));
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
    // Give a (wrong) immediate resume the chance to happen while the holder still executes.
    await Promise.race([resumed, new Promise((resolve) => setTimeout(resolve, 500))]);
    releases.get(holder.id)!();
    await finished([waiter.id, holder.id]);
    const mine = intervals.filter((i) => i.runId === waiter.id || i.runId === holder.id);
    expect(mine).toHaveLength(2);
    expect(overlaps(mine)).toEqual([]);
    expect((await getRunRow(te, waiter.id)).status).toBe("COMPLETED");
  });
});
