// Concurrency limits declared in task code (task `concurrency`, concurrencyLimit(); migration 0050)
// across two workers that each have their own pool, as two processes would: the bounds the tasks
// declare hold for their runs, across two queues, never exceeded, not by one (sampled from the
// database's EXECUTING rows and counted in the task code) and reached; an inline limit caps its task;
// an operator's override replaces the declared bound until a reset returns to it; a trigger's
// `concurrency` replaces the task's named limits for its run, not its inline one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overrideConcurrencyLimit, resetConcurrencyLimit, retrieveConcurrencyLimit, setConcurrencyLimitPaused, triggerRun } from "@svc/runtime/engine";
import { concurrencyLimit, task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const finished = new Set<string>();

/** Executions in flight per group, in this process, and the most seen at once. */
const inFlight = new Map<string, number>();
const most = new Map<string, number>();
const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Payload {
  group: string;
  holdMs?: number;
  /** Hold until this many runs of the group execute at once (at most 3 s). */
  together?: number;
}

async function measured(p: Payload): Promise<void> {
  const now = (inFlight.get(p.group) ?? 0) + 1;
  inFlight.set(p.group, now);
  most.set(p.group, Math.max(most.get(p.group) ?? 0, now));
  try {
    if (p.together === undefined) await hold(p.holdMs ?? 0);
    else {
      const deadline = Date.now() + 3000;
      while ((inFlight.get(p.group) ?? 0) < p.together && Date.now() < deadline) await hold(5);
      await hold(20);
    }
  } finally {
    inFlight.set(p.group, inFlight.get(p.group)! - 1);
  }
}

const openai = concurrencyLimit({ name: "dl-openai", total: 3 });
// Two tasks on two queues without a limit of their own: only the declared limit holds them back.
// One passes the limit, the other names it.
const alpha = task({ id: "dl-alpha", queue: { name: "dl-alpha" }, concurrency: [openai], run: async (p: Payload) => measured(p) });
const beta = task({ id: "dl-beta", queue: { name: "dl-beta" }, concurrency: "dl-openai", run: async (p: Payload) => measured(p) });
// Its own inline limit, and a named one.
const inline = task({ id: "dl-inline", concurrency: [{ total: 2 }, openai], run: async (p: Payload) => measured(p) });
const tasks = [alpha, beta, inline];

async function allFinished(ids: string[]): Promise<void> {
  await eventually(async () => ids.every((id) => finished.has(id)), 30_000);
}

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await getRunRow(te, id)).status));
}

/** Samples the most EXECUTING runs holding `limit` the database holds at once, until `stop` resolves. */
async function sampleExecuting(limit: string, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let max = 0;
  while (!done) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE environment_id = $1 AND status = 'EXECUTING' AND $2 = ANY (concurrency_limits)`,
      [te.env.id, limit],
    );
    max = Math.max(max, rows[0]!.n);
  }
  return max;
}

/** Triggers `count` runs alternating between the two tasks (so the two queues), with no `concurrency` of the trigger's own. */
async function trigger(count: number, payload: Payload): Promise<string[]> {
  const runs = await Promise.all(Array.from({ length: count }, (_, i) => triggerRun(te.engine, te.env, i % 2 === 0 ? "dl-alpha" : "dl-beta", payload)));
  return runs.map((r) => r.id);
}

/** Runs `count` runs holding dl-openai (each waiting for `together` of them to execute at once, or holding `holdMs`); returns the most sampled from the database. */
async function measure(count: number, run: { together: number } | { holdMs: number }): Promise<number> {
  most.set("dl-openai", 0);
  const ids = await trigger(count, { group: "dl-openai", ...run });
  const done = allFinished(ids);
  const sampled = await sampleExecuting("dl-openai", done);
  await done;
  expect(await statuses(ids)).toEqual(Array(count).fill("COMPLETED"));
  return sampled;
}

const now = () => te.engine.clock.now();

beforeAll(async () => {
  te = await startTestEngine();
  for (let i = 0; i < 2; i++) {
    const w = await startTestWorker(te, tasks, { pollIntervalMs: 5 });
    w.worker.events.on("runFinished", (e) => finished.add(e.runId));
    workers.push(w);
  }
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("concurrency limits declared in task code, across two queues and two workers", () => {
  it("registers each declared limit with its bounds as the base, the inline one under task/<id>", async () => {
    expect(await retrieveConcurrencyLimit(te.engine.db, te.env.id, "dl-openai")).toMatchObject({ name: "dl-openai", total: 3, perKey: null, totalOverride: null, paused: false });
    expect(await retrieveConcurrencyLimit(te.engine.db, te.env.id, "task/dl-inline")).toMatchObject({ name: "task/dl-inline", total: 2, perKey: null });
    const run = await triggerRun(te.engine, te.env, "dl-inline", { group: "x" });
    expect((await getRunRow(te, run.id)).concurrency_limits).toEqual(["dl-openai", "task/dl-inline"]);
    await allFinished([run.id]);
  });

  it("never runs more than the declared total across both queues, not by one, and reaches it", async () => {
    const ids = await trigger(40, { group: "dl-openai", holdMs: 10 });
    const done = allFinished(ids);
    const sampled = await sampleExecuting("dl-openai", done);
    await done;
    expect(sampled).toBeLessThanOrEqual(3);
    expect(most.get("dl-openai")).toBeLessThanOrEqual(3);
    expect(await statuses(ids)).toEqual(Array(40).fill("COMPLETED"));

    // Three at once is reached (each run waits for three to execute together), never four.
    expect(await measure(12, { together: 3 })).toBeLessThanOrEqual(3);
    expect(most.get("dl-openai")).toBe(3);
  });

  it("caps a task at its inline limit", async () => {
    const ids = await Promise.all(Array.from({ length: 10 }, () => triggerRun(te.engine, te.env, "dl-inline", { group: "dl-inline", together: 2 })));
    const done = allFinished(ids.map((r) => r.id));
    const sampled = await sampleExecuting("task/dl-inline", done);
    await done;
    expect(sampled).toBeLessThanOrEqual(2);
    expect(most.get("dl-inline")).toBe(2);
  });

  it("an override replaces the declared bound until a reset returns to it", async () => {
    const overridden = await overrideConcurrencyLimit(te.engine, te.env.id, "dl-openai", { total: 1 }, now());
    expect(overridden).toMatchObject({ total: 3, totalOverride: 1 });
    expect(await measure(10, { holdMs: 10 })).toBeLessThanOrEqual(1);
    expect(most.get("dl-openai")).toBe(1);

    const reset = await resetConcurrencyLimit(te.engine, te.env.id, "dl-openai", now());
    expect(reset).toMatchObject({ total: 3, totalOverride: null, overriddenAt: null });
    expect(await measure(9, { together: 3 })).toBeLessThanOrEqual(3);
    expect(most.get("dl-openai")).toBe(3);
  });

  it("a trigger's concurrency replaces the task's named limits for its run, not its inline limit", async () => {
    // The declared limit paused: its runs stay QUEUED, a run whose trigger replaced it does not.
    await setConcurrencyLimitPaused(te.engine, te.env.id, "dl-openai", true, now());
    try {
      const declared = await triggerRun(te.engine, te.env, "dl-alpha", { group: "held" });
      const replaced = await triggerRun(te.engine, te.env, "dl-alpha", { group: "replaced" }, { concurrency: ["dl-elsewhere"] });
      const inlineKept = await triggerRun(te.engine, te.env, "dl-inline", { group: "replaced" }, { concurrency: ["dl-elsewhere"] });
      expect((await getRunRow(te, declared.id)).concurrency_limits).toEqual(["dl-openai"]);
      expect((await getRunRow(te, replaced.id)).concurrency_limits).toEqual(["dl-elsewhere"]);
      expect((await getRunRow(te, inlineKept.id)).concurrency_limits).toEqual(["dl-elsewhere", "task/dl-inline"]);
      await allFinished([replaced.id, inlineKept.id]);
      expect((await getRunRow(te, declared.id)).status).toBe("QUEUED");
      await setConcurrencyLimitPaused(te.engine, te.env.id, "dl-openai", false, now());
      await allFinished([declared.id]);
    } finally {
      await setConcurrencyLimitPaused(te.engine, te.env.id, "dl-openai", false, now());
    }
  });
});
