// Named concurrency limits (engine/concurrency-limits, CLAIM_LIMITED_SQL under
// NAMED_LIMITS_LOCK_SQL) across two workers that each have their own pool, as two processes would:
// runs of two tasks on two different queues that hold the same limit never execute more than its
// `total`, nor more than its `perKey` per concurrency key, not by one (sampled from the database's
// EXECUTING rows and counted in the task code); a key's own override narrows that key alone; a
// paused limit starts none of its runs until resumed; an override of 0 blocks, a reset lifts it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  overrideConcurrencyLimit,
  overrideConcurrencyLimitKey,
  resetConcurrencyLimit,
  resetConcurrencyLimitKey,
  retrieveConcurrencyLimit,
  retrieveConcurrencyLimitKey,
  setConcurrencyLimitPaused,
  triggerRun,
} from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const finished = new Set<string>();

/** Executions in flight per group (a limit, or a limit's key), in this process, and the most seen at once. */
const inFlight = new Map<string, number>();
const most = new Map<string, number>();
const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Payload {
  groups: string[];
  holdMs?: number;
  /** Hold until this many runs of the first group execute at once (at most 3 s). */
  together?: number;
}

async function measured(p: Payload): Promise<void> {
  for (const g of p.groups) {
    const now = (inFlight.get(g) ?? 0) + 1;
    inFlight.set(g, now);
    most.set(g, Math.max(most.get(g) ?? 0, now));
  }
  try {
    if (p.together === undefined) await hold(p.holdMs ?? 0);
    else {
      const deadline = Date.now() + 3000;
      while ((inFlight.get(p.groups[0]!) ?? 0) < p.together && Date.now() < deadline) await hold(5);
      await hold(20);
    }
  } finally {
    for (const g of p.groups) inFlight.set(g, inFlight.get(g)! - 1);
  }
}

// Two tasks on two queues without a limit of their own: only the named limit holds them back.
const alpha = task({ id: "nl-alpha", queue: { name: "nl-alpha" }, run: async (p: Payload) => measured(p) });
const beta = task({ id: "nl-beta", queue: { name: "nl-beta" }, run: async (p: Payload) => measured(p) });
const sentinel = task({ id: "nl-sentinel", run: async () => "ok" });
const tasks = [alpha, beta, sentinel];

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await getRunRow(te, id)).status));
}

async function allFinished(ids: string[]): Promise<void> {
  await eventually(async () => ids.every((id) => finished.has(id)), 30_000);
}

/** Passes of both workers' claims: sentinel runs, started by the plain claim, finish. */
async function claimsHaveRun(): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await triggerRun(te.engine, te.env, "nl-sentinel", {})).id);
  await allFinished(ids);
}

/** Samples the most EXECUTING runs holding `limit` (of concurrency key `key`, when given) the database holds at once, until `stop` resolves. */
async function sampleExecuting(limit: string, key: string | null, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let max = 0;
  while (!done) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE environment_id = $1 AND status = 'EXECUTING' AND $2 = ANY (concurrency_limits)
         AND ($3::text IS NULL OR concurrency_key = $3)`,
      [te.env.id, limit, key],
    );
    max = Math.max(max, rows[0]!.n);
  }
  return max;
}

/** Triggers `count` runs alternating between the two tasks (so the two queues), each holding `limits`. */
async function trigger(count: number, limits: string[], payload: (i: number) => Payload, key?: (i: number) => string): Promise<string[]> {
  const runs = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      triggerRun(te.engine, te.env, i % 2 === 0 ? "nl-alpha" : "nl-beta", payload(i), { concurrency: limits, ...(key ? { concurrencyKey: key(i) } : {}) }),
    ),
  );
  return runs.map((r) => r.id);
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

describe("named concurrency limits across two queues and two workers", () => {
  it("a trigger naming a limit nobody set runs unlimited, claimed by the limited claim", async () => {
    const ids = await trigger(6, ["nl-unset"], () => ({ groups: ["nl-unset"], together: 6 }));
    expect((await getRunRow(te, ids[0]!)).claim_from_runs).toBe(false);
    await allFinished(ids);
    expect(most.get("nl-unset")).toBe(6);
    expect(await statuses(ids)).toEqual(Array(6).fill("COMPLETED"));
  });

  it("never runs more than the limit's total across both queues, and reaches it", async () => {
    const limit = await overrideConcurrencyLimit(te.engine, te.env.id, "nl-total", { total: 3 }, now());
    expect(limit).toMatchObject({ name: "nl-total", total: null, totalOverride: 3, perKeyOverride: null, paused: false, running: 0 });
    expect(limit.id).toMatch(/^climit_/);

    const ids = await trigger(40, ["nl-total"], () => ({ groups: ["nl-total"], holdMs: 10 }));
    const done = allFinished(ids);
    const sampled = await sampleExecuting("nl-total", null, done);
    await done;
    expect(sampled).toBeLessThanOrEqual(3);
    expect(most.get("nl-total")).toBeLessThanOrEqual(3);
    expect(await statuses(ids)).toEqual(Array(40).fill("COMPLETED"));

    // Three at once is reached (each run waits for three to execute together), never four.
    most.set("nl-total", 0);
    const together = await trigger(12, ["nl-total"], () => ({ groups: ["nl-total"], together: 3 }));
    const done2 = allFinished(together);
    expect(await sampleExecuting("nl-total", null, done2)).toBeLessThanOrEqual(3);
    await done2;
    expect(most.get("nl-total")).toBe(3);
  });

  it("caps each concurrency key at perKey, a key's own override narrower, and a run holding two limits obeys both", async () => {
    await overrideConcurrencyLimit(te.engine, te.env.id, "nl-keys", { perKey: 2 }, now());
    const key = await overrideConcurrencyLimitKey(te.engine, te.env.id, "nl-keys", "narrow", 1, new Date(now().getTime() + 3_600_000), now());
    expect(key).toMatchObject({ name: "nl-keys", concurrencyKey: "narrow", perKey: 2, keyOverride: 1, paused: false });
    // A second limit with a total of 3 over both keys.
    await overrideConcurrencyLimit(te.engine, te.env.id, "nl-both", { total: 3 }, now());

    const keyOf = (i: number) => (i % 4 < 2 ? "wide" : "narrow");
    const ids = await trigger(32, ["nl-keys", "nl-both"], (i) => ({ groups: [`nl-keys:${keyOf(i)}`, "nl-both"], holdMs: 10 }), keyOf);
    const done = allFinished(ids);
    const [wide, narrow, both] = await Promise.all([
      sampleExecuting("nl-keys", "wide", done),
      sampleExecuting("nl-keys", "narrow", done),
      sampleExecuting("nl-both", null, done),
    ]);
    await done;
    expect(wide).toBeLessThanOrEqual(2);
    expect(narrow).toBeLessThanOrEqual(1);
    expect(both).toBeLessThanOrEqual(3);
    expect(most.get("nl-keys:wide")).toBeLessThanOrEqual(2);
    expect(most.get("nl-keys:narrow")).toBeLessThanOrEqual(1);
    expect(most.get("nl-both")).toBeLessThanOrEqual(3);
    expect(await statuses(ids)).toEqual(Array(32).fill("COMPLETED"));

    // The key's reset puts it back under the limit's perKey.
    const reset = await resetConcurrencyLimitKey(te.engine, te.env.id, "nl-keys", "narrow", now());
    expect(reset).toMatchObject({ perKey: 2, keyOverride: null, expiresAt: null });
    most.set("nl-keys:narrow", 0);
    const again = await trigger(8, ["nl-keys"], () => ({ groups: ["nl-keys:narrow"], together: 2 }), () => "narrow");
    await allFinished(again);
    expect(most.get("nl-keys:narrow")).toBe(2);
    // A key override that has lapsed no longer holds.
    await overrideConcurrencyLimitKey(te.engine, te.env.id, "nl-keys", "lapsed", 0, new Date(now().getTime() - 1000), now());
    expect(await retrieveConcurrencyLimitKey(te.engine.db, te.env.id, "nl-keys", "lapsed", now())).toMatchObject({ perKey: 2, keyOverride: null });
  });

  it("a paused limit starts none of its runs, in either queue, until resumed; runs without it go on", async () => {
    await overrideConcurrencyLimit(te.engine, te.env.id, "nl-paused", { total: 5 }, now());
    const paused = await setConcurrencyLimitPaused(te.engine, te.env.id, "nl-paused", true, now());
    expect(paused.paused).toBe(true);
    const ids = await trigger(4, ["nl-paused"], () => ({ groups: ["nl-paused"] }));
    await claimsHaveRun();
    expect(await statuses(ids)).toEqual(Array(4).fill("QUEUED"));
    expect(await retrieveConcurrencyLimit(te.engine.db, te.env.id, "nl-paused")).toMatchObject({ paused: true, queued: 4, running: 0 });

    const resumed = await setConcurrencyLimitPaused(te.engine, te.env.id, "nl-paused", false, now());
    expect(resumed.paused).toBe(false);
    await allFinished(ids);
    expect(await statuses(ids)).toEqual(Array(4).fill("COMPLETED"));
  });

  it("an override of 0 starts nothing; a reset lifts it (no declared bound: no limit)", async () => {
    await overrideConcurrencyLimit(te.engine, te.env.id, "nl-zero", { perKey: 0 }, now());
    const ids = await trigger(3, ["nl-zero"], () => ({ groups: ["nl-zero"] }));
    await claimsHaveRun();
    expect(await statuses(ids)).toEqual(Array(3).fill("QUEUED"));
    const reset = await resetConcurrencyLimit(te.engine, te.env.id, "nl-zero", now());
    expect(reset).toMatchObject({ perKeyOverride: null, totalOverride: null, overriddenAt: null });
    await allFinished(ids);
  });

  it("names an unknown limit in a NotFoundError", async () => {
    await expect(retrieveConcurrencyLimit(te.engine.db, te.env.id, "nl-nope")).rejects.toThrow('No concurrency limit named "nl-nope"');
    await expect(resetConcurrencyLimit(te.engine, te.env.id, "nl-nope", now())).rejects.toThrow('No concurrency limit named "nl-nope"');
  });
});
