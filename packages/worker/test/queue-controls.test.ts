// Queues an operator controls (engine/queues/queue-controls.ts), across two workers that each have
// their own pool, as two processes would: a paused queue starts nothing (runs queued before the
// pause and triggered during it stay QUEUED), a resume starts them; a concurrencyLimit override
// lowers or raises the limit, executing runs included, and is never exceeded, not by one; a reset
// puts back the limit the tasks declare.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overrideQueueLimit, registerQueues, resetQueueLimit, retrieveQueue, setQueuePaused, triggerRun, type QueueRef } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const finished = new Set<string>();

/** Executions in flight per queue, in this process (both workers run here), and the most seen at once. */
const inFlight = new Map<string, number>();
const most = new Map<string, number>();
const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function measured(queue: string, body: () => Promise<unknown>): Promise<void> {
  const now = (inFlight.get(queue) ?? 0) + 1;
  inFlight.set(queue, now);
  most.set(queue, Math.max(most.get(queue) ?? 0, now));
  try {
    await body();
  } finally {
    inFlight.set(queue, inFlight.get(queue)! - 1);
  }
}

/** Holds `holdMs`, or until `together` runs of its queue execute at once (at most 3 s). */
async function holdFor(queue: string, payload: { holdMs?: number; together?: number }): Promise<void> {
  if (payload.together === undefined) return void (await hold(payload.holdMs ?? 0));
  const deadline = Date.now() + 3000;
  while ((inFlight.get(queue) ?? 0) < payload.together && Date.now() < deadline) await hold(5);
  await hold(20);
}

const releases = new Map<string, () => void>();
const free = task({ id: "ctl-free", queue: { name: "ctl-free" }, run: async (p: { holdMs?: number; together?: number }) => measured("ctl-free", () => holdFor("ctl-free", p)) });
const declared = task({ id: "ctl-declared", queue: { name: "ctl-declared", concurrencyLimit: 1 }, run: async (p: { holdMs?: number }) => measured("ctl-declared", () => holdFor("ctl-declared", p)) });
const held = task({
  id: "ctl-held",
  queue: { name: "ctl-held" },
  run: async (_: unknown, { ctx }) => measured("ctl-held", () => new Promise<void>((resolve) => releases.set(ctx.run.id, resolve))),
});
const sentinel = task({ id: "ctl-sentinel", run: async () => "ok" });
const tasks = [free, declared, held, sentinel];

const FREE: QueueRef = { type: "custom", name: "ctl-free" };
const HELD: QueueRef = { type: "custom", name: "ctl-held" };
const DECLARED: QueueRef = { type: "custom", name: "ctl-declared" };

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await getRunRow(te, id)).status));
}

async function allFinished(ids: string[]): Promise<void> {
  await eventually(async () => ids.every((id) => finished.has(id)), 30_000);
}

/**
 * Passes of both workers' claims: sentinel runs, started by the plain claim, finish. A run the
 * claims could take would have been taken by then (the claims take the oldest ready runs first).
 */
async function claimsHaveRun(): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await triggerRun(te.engine, te.env, "ctl-sentinel", {})).id);
  await allFinished(ids);
}

/** Samples how many runs of `queue` the database holds EXECUTING, until `stop` resolves; the most seen. */
async function sampleExecuting(queue: string, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let max = 0;
  while (!done) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE environment_id = $1 AND queue_name = $2 AND status = 'EXECUTING'`,
      [te.env.id, queue],
    );
    max = Math.max(max, rows[0]!.n);
  }
  return max;
}

async function underLoad(queue: string, count: number, payload: object): Promise<{ ids: string[]; sampled: number }> {
  most.set(queue, 0);
  const ids = (await Promise.all(Array.from({ length: count }, () => triggerRun(te.engine, te.env, queue, payload)))).map((r) => r.id);
  const done = allFinished(ids);
  const sampled = await sampleExecuting(queue, done);
  await done;
  return { ids, sampled };
}

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  for (const release of releases.values()) release();
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("queue controls across two workers", () => {
  it("a paused queue starts none of its runs, queued before the pause or triggered during it; resume starts them all", async () => {
    // Runs queued before any worker (so before the pause): the plain claim's, until the pause moves
    // them. No worker registered the task yet: the trigger names its queue.
    await registerQueues(te.engine.db, te.env.id, ["ctl-free"], te.engine.clock.now());
    const before: string[] = [];
    for (let i = 0; i < 3; i++) before.push((await triggerRun(te.engine, te.env, "ctl-free", {}, { queue: { name: "ctl-free" } })).id);
    expect((await getRunRow(te, before[0]!)).claim_from_runs).toBe(true);
    const paused = await setQueuePaused(te.engine, te.env.id, FREE, true, te.engine.clock.now());
    expect(paused.paused).toBe(true);
    expect(paused.queued).toBe(3);
    expect((await getRunRow(te, before[0]!)).claim_from_runs).toBe(false);

    for (let i = 0; i < 2; i++) {
      const w = await startTestWorker(te, tasks, { pollIntervalMs: 5 });
      w.worker.events.on("runFinished", (e) => finished.add(e.runId));
      workers.push(w);
    }
    // Triggered while paused, with live workers that have free slots: not offered, not claimed.
    const during: string[] = [];
    for (let i = 0; i < 2; i++) during.push((await triggerRun(te.engine, te.env, "ctl-free", {})).id);
    await claimsHaveRun();
    expect(await statuses([...before, ...during])).toEqual(Array(5).fill("QUEUED"));
    expect((await retrieveQueue(te.engine.db, te.env.id, FREE)).queued).toBe(5);
    // Pausing again changes nothing.
    expect((await setQueuePaused(te.engine, te.env.id, FREE, true, te.engine.clock.now())).paused).toBe(true);

    const resumed = await setQueuePaused(te.engine, te.env.id, FREE, false, te.engine.clock.now());
    expect(resumed.paused).toBe(false);
    await allFinished([...before, ...during]);
    expect(await statuses([...before, ...during])).toEqual(Array(5).fill("COMPLETED"));
  });

  it("an override below the runs executing starts no more until they end, then one at a time", async () => {
    const first: string[] = [];
    for (let i = 0; i < 4; i++) first.push((await triggerRun(te.engine, te.env, "ctl-held", {})).id);
    await eventually(async () => first.every((id) => releases.has(id)));
    const at = te.engine.clock.now();
    const overridden = await overrideQueueLimit(te.engine, te.env.id, HELD, 1, at, null);
    expect(overridden).toMatchObject({ limitOverride: 1, declaredLimit: null, running: 4, overriddenAt: at });

    const next: string[] = [];
    for (let i = 0; i < 3; i++) next.push((await triggerRun(te.engine, te.env, "ctl-held", {})).id);
    await claimsHaveRun();
    expect(await statuses(next)).toEqual(Array(3).fill("QUEUED"));
    // Three of the four end: one still executes, the limit is 1, nothing starts.
    for (const id of first.slice(0, 3)) releases.get(id)!();
    await allFinished(first.slice(0, 3));
    await claimsHaveRun();
    expect(await statuses(next)).toEqual(Array(3).fill("QUEUED"));
    // The last one ends: the next three run one at a time.
    most.set("ctl-held", 0);
    releases.get(first[3]!)!();
    for (const id of next) {
      await eventually(async () => releases.has(id) || null);
      await claimsHaveRun();
      expect(inFlight.get("ctl-held")).toBe(1);
      releases.get(id)!();
    }
    await allFinished(next);
    expect(most.get("ctl-held")).toBe(1);
  });

  it("holds an overridden limit under load across both workers, lowered and raised, never over it", async () => {
    await overrideQueueLimit(te.engine, te.env.id, FREE, 3, te.engine.clock.now(), null);
    const lowered = await underLoad("ctl-free", 40, { holdMs: 10 });
    expect(most.get("ctl-free")).toBeLessThanOrEqual(3);
    expect(lowered.sampled).toBeLessThanOrEqual(3);
    expect(await statuses(lowered.ids)).toEqual(Array(40).fill("COMPLETED"));

    // Raised: six at once (each run waits for six to execute together), never seven.
    const raised = await overrideQueueLimit(te.engine, te.env.id, FREE, 6, te.engine.clock.now(), null);
    expect(raised.limitOverride).toBe(6);
    const load = await underLoad("ctl-free", 24, { together: 6 });
    expect(most.get("ctl-free")).toBe(6);
    expect(load.sampled).toBeLessThanOrEqual(6);

    // Zero: nothing starts, as a pause.
    await overrideQueueLimit(te.engine, te.env.id, FREE, 0, te.engine.clock.now(), null);
    const blocked = (await triggerRun(te.engine, te.env, "ctl-free", {})).id;
    await claimsHaveRun();
    expect(await statuses([blocked])).toEqual(["QUEUED"]);
    // Reset: the queue declares no limit, so it is the plain claim's again.
    const reset = await resetQueueLimit(te.engine, te.env.id, FREE, te.engine.clock.now());
    expect(reset).toMatchObject({ limitOverride: null, overriddenAt: null, declaredLimit: null });
    await allFinished([blocked]);
    expect((await getRunRow(te, blocked)).claim_from_runs).toBe(true);
  });

  it("a reset puts back the concurrencyLimit the tasks declare", async () => {
    const raised = await overrideQueueLimit(te.engine, te.env.id, DECLARED, 4, te.engine.clock.now(), null);
    expect(raised).toMatchObject({ declaredLimit: 1, limitOverride: 4 });
    const wide = await underLoad("ctl-declared", 12, { holdMs: 20 });
    expect(most.get("ctl-declared")).toBeLessThanOrEqual(4);
    expect(wide.sampled).toBeLessThanOrEqual(4);
    expect(most.get("ctl-declared")).toBeGreaterThan(1);

    const reset = await resetQueueLimit(te.engine, te.env.id, DECLARED, te.engine.clock.now());
    expect(reset).toMatchObject({ declaredLimit: 1, limitOverride: null });
    const narrow = await underLoad("ctl-declared", 12, { holdMs: 5 });
    expect(most.get("ctl-declared")).toBe(1);
    expect(narrow.sampled).toBeLessThanOrEqual(1);
    // A reset of a queue without an override changes nothing.
    expect(await resetQueueLimit(te.engine, te.env.id, DECLARED, te.engine.clock.now())).toMatchObject({ declaredLimit: 1, limitOverride: null });
  });

  it("names an unknown queue in a NotFoundError", async () => {
    await expect(setQueuePaused(te.engine, te.env.id, { type: "custom", name: "nope" }, true, te.engine.clock.now())).rejects.toThrow("No custom queue named nope");
    await expect(retrieveQueue(te.engine.db, te.env.id, { id: "queue_nope" })).rejects.toThrow("No queue with id queue_nope");
    // A task's own queue is found by the task id, with or without its task/ prefix.
    expect((await retrieveQueue(te.engine.db, te.env.id, { type: "task", name: "ctl-sentinel" })).name).toBe("task/ctl-sentinel");
  });
});
