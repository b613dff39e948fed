// Gates (a trigger's `gates`, migration 0049; CLAIM_LIMITED_SQL with engine/runs/gate-sql.ts under
// GATE_QUEUE_LOCKS_SQL) across two workers that each have their own pool, as two processes would: a
// gate queue's pool (its limit, per concurrency key) is never over its limit, not by one, counting
// its own executing runs and the runs of other queues gated on it (sampled from the database's
// EXECUTING rows and counted in the task code), in both directions; a paused gate queue holds gated
// runs; a gated run's resume takes a slot again; runs of two queues gated on each other never
// deadlock their claims; a gate on a queue without a limit gates nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, overrideConcurrencyLimit, setQueuePaused, triggerRun, withTransaction, type RunRow } from "@svc/runtime/engine";
import { forToken, task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const finished = new Set<string>();
const errors: unknown[] = [];

/** Executions in flight per group (a pool), in this process, and the most seen at once. */
const inFlight = new Map<string, number>();
const most = new Map<string, number>();
const releases = new Map<string, () => void>();
const hold = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Payload {
  /** The pools the run is in while it executes. */
  groups: string[];
  holdMs?: number;
  /** Hold until this many runs of the first group execute at once (at most 3 s). */
  together?: number;
  /** Hold until the test releases the run (releases.get(runId)). */
  held?: boolean;
  /** Wait for this token first (the run suspends, then resumes). */
  tokenId?: string;
}

async function measured(p: Payload, runId: string): Promise<void> {
  if (p.tokenId) await forToken(p.tokenId);
  for (const g of p.groups) {
    const now = (inFlight.get(g) ?? 0) + 1;
    inFlight.set(g, now);
    most.set(g, Math.max(most.get(g) ?? 0, now));
  }
  try {
    if (p.held) await new Promise<void>((resolve) => releases.set(runId, resolve));
    else if (p.together === undefined) await hold(p.holdMs ?? 0);
    else {
      const deadline = Date.now() + 3000;
      while ((inFlight.get(p.groups[0]!) ?? 0) < p.together && Date.now() < deadline) await hold(5);
      await hold(20);
    }
  } finally {
    for (const g of p.groups) inFlight.set(g, inFlight.get(g)! - 1);
  }
}

const run = async (p: Payload, { ctx }: { ctx: { run: { id: string } } }) => measured(p, ctx.run.id);
// The gate queue: a limit of 2 per concurrency key, declared by its task.
const target = task({ id: "gt-target", queue: { name: "gt-emails", concurrencyLimit: 2 }, run });
// Two tasks on two queues without a limit of their own: only their gates hold them back.
const alpha = task({ id: "gt-alpha", queue: { name: "gt-alpha" }, run });
const beta = task({ id: "gt-beta", queue: { name: "gt-beta" }, run });
// Two queues of one at a time, whose runs are gated on each other.
const x = task({ id: "gt-x", queue: { name: "gt-x", concurrencyLimit: 1 }, run });
const y = task({ id: "gt-y", queue: { name: "gt-y", concurrencyLimit: 1 }, run });
const sentinel = task({ id: "gt-sentinel", run: async () => "ok" });
const tasks = [target, alpha, beta, x, y, sentinel];

const EMAILS = { type: "custom", name: "gt-emails" } as const;
const now = () => te.engine.clock.now();

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await getRunRow(te, id)).status));
}

async function allFinished(ids: string[]): Promise<void> {
  await eventually(async () => ids.every((id) => finished.has(id)), 30_000);
}

/** Passes of both workers' claims: sentinel runs, started by the plain claim, finish. */
async function claimsHaveRun(): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await triggerRun(te.engine, te.env, "gt-sentinel", {})).id);
  await allFinished(ids);
}

/**
 * Samples the most EXECUTING runs the database holds at once in the pool of `queue`'s key `key`
 * ('' for none): the queue's own runs of that key and the runs gated on it, each once, until `stop`.
 */
async function samplePool(queue: string, key: string, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  let max = 0;
  while (!done) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs r WHERE r.environment_id = $1 AND r.status = 'EXECUTING'
         AND ((r.queue_name = $2 AND coalesce(r.concurrency_key, '') = $3)
           OR EXISTS (SELECT 1 FROM jsonb_to_recordset(r.gates) AS g(queue text, "concurrencyKey" text) WHERE g.queue = $2 AND coalesce(g."concurrencyKey", '') = $3))`,
      [te.env.id, queue, key],
    );
    max = Math.max(max, rows[0]!.n);
  }
  return max;
}

type Gates = { queue: string; concurrencyKey?: string }[];

/** Triggers `task` with `payload`, `gates` and a concurrency key. */
async function trigger(taskId: string, payload: Payload, options: { gates?: Gates; concurrencyKey?: string; concurrency?: string[] } = {}): Promise<string> {
  return (await triggerRun(te.engine, te.env, taskId, payload, options)).id;
}

beforeAll(async () => {
  te = await startTestEngine();
  for (let i = 0; i < 2; i++) {
    const w = await startTestWorker(te, tasks, { pollIntervalMs: 5 });
    w.worker.events.on("runFinished", (e) => finished.add(e.runId));
    w.worker.events.on("error", (e) => errors.push(e.error));
    workers.push(w);
  }
});
afterAll(async () => {
  for (const release of releases.values()) release();
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("gates across queues and two workers", () => {
  it("a gate on a queue without a limit, or on a queue svc does not know, gates nothing; the run is the limited claim's", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const gates = i % 2 === 0 ? [{ queue: "gt-beta" }] : [{ queue: "gt-nowhere", concurrencyKey: "k" }];
      ids.push(await trigger("gt-alpha", { groups: ["unlimited"], together: 6 }, { gates }));
    }
    expect(await getRunRow(te, ids[0]!)).toMatchObject({ claim_from_runs: false, gates: [{ queue: "gt-beta" }] });
    await allFinished(ids);
    expect(most.get("unlimited")).toBe(6);
    expect(await statuses(ids)).toEqual(Array(6).fill("COMPLETED"));
  });

  it("never runs more than the gate queue's limit, its own runs and runs gated on it from two queues together, and reaches it", async () => {
    const payload = (): Payload => ({ groups: ["emails"], holdMs: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 42; i++) {
      if (i % 3 === 0) ids.push(await trigger("gt-target", payload()));
      else ids.push(await trigger(i % 3 === 1 ? "gt-alpha" : "gt-beta", payload(), { gates: [{ queue: "gt-emails" }] }));
    }
    const done = allFinished(ids);
    const sampled = await samplePool("gt-emails", "", done);
    await done;
    expect(sampled).toBeLessThanOrEqual(2);
    expect(most.get("emails")).toBeLessThanOrEqual(2);
    expect(await statuses(ids)).toEqual(Array(42).fill("COMPLETED"));

    // Two at once is reached (each run waits for two to execute together), never three.
    most.set("emails", 0);
    const together: string[] = [];
    for (let i = 0; i < 12; i++) {
      const p: Payload = { groups: ["emails"], together: 2 };
      together.push(i % 2 === 0 ? await trigger("gt-target", p) : await trigger("gt-alpha", p, { gates: [{ queue: "gt-emails" }] }));
    }
    const done2 = allFinished(together);
    expect(await samplePool("gt-emails", "", done2)).toBeLessThanOrEqual(2);
    await done2;
    expect(most.get("emails")).toBe(2);
  });

  it("starts no gated run while the gate queue's own runs fill its limit", async () => {
    const own = [await trigger("gt-target", { groups: [], held: true }), await trigger("gt-target", { groups: [], held: true })];
    await eventually(async () => own.every((id) => releases.has(id)));
    const gated = [
      await trigger("gt-alpha", { groups: [] }, { gates: [{ queue: "gt-emails" }] }),
      await trigger("gt-beta", { groups: [] }, { gates: [{ queue: "gt-emails" }] }),
    ];
    // A gate on another key of the queue is another pool: it has room.
    const otherKey = await trigger("gt-alpha", { groups: [] }, { gates: [{ queue: "gt-emails", concurrencyKey: "other" }] });
    await claimsHaveRun();
    expect(await statuses(gated)).toEqual(["QUEUED", "QUEUED"]);
    await allFinished([otherKey]);
    for (const id of own) releases.get(id)!();
    await allFinished([...own, ...gated]);
  });

  it("starts none of the gate queue's own runs while runs gated on it fill its limit", async () => {
    const gated = [
      await trigger("gt-alpha", { groups: [], held: true }, { gates: [{ queue: "gt-emails" }] }),
      await trigger("gt-beta", { groups: [], held: true }, { gates: [{ queue: "gt-emails" }] }),
    ];
    await eventually(async () => gated.every((id) => releases.has(id)));
    const own = [await trigger("gt-target", { groups: [] }), await trigger("gt-target", { groups: [] })];
    // The queue's own run of another key has room.
    const otherKey = await trigger("gt-target", { groups: [] }, { concurrencyKey: "other" });
    await claimsHaveRun();
    expect(await statuses(own)).toEqual(["QUEUED", "QUEUED"]);
    await allFinished([otherKey]);
    for (const id of gated) releases.get(id)!();
    await allFinished([...own, ...gated]);
  });

  it("counts a gate with a concurrencyKey in that key's pool of the gate queue, each key up to the limit", async () => {
    const keyOf = (i: number) => (i % 2 === 0 ? "a" : "b");
    // Triggered at once: many runs of each pool are ready together.
    const ids = await Promise.all(
      Array.from({ length: 32 }, (_, i) => {
        const key = keyOf(i);
        const p: Payload = { groups: [`emails:${key}`], holdMs: 10 };
        // The gate queue's own runs of the key, and runs of two other queues gated on that key (with
        // keys of their own, which their queues do not limit).
        if (i % 4 < 2) return trigger("gt-target", p, { concurrencyKey: key });
        return trigger(i % 8 < 4 ? "gt-alpha" : "gt-beta", p, { gates: [{ queue: "gt-emails", concurrencyKey: key }], concurrencyKey: `own-${i}` });
      }),
    );
    const done = allFinished(ids);
    const [a, b] = await Promise.all([samplePool("gt-emails", "a", done), samplePool("gt-emails", "b", done)]);
    await done;
    expect(a).toBeLessThanOrEqual(2);
    expect(b).toBeLessThanOrEqual(2);
    expect(most.get("emails:a")).toBeLessThanOrEqual(2);
    expect(most.get("emails:b")).toBeLessThanOrEqual(2);
    expect(await statuses(ids)).toEqual(Array(32).fill("COMPLETED"));
  });

  it("a run gated on another key of its own queue takes that key's room beside the key's own runs", async () => {
    // Runs of key "self-a" gated on key "self-b" of the same queue, and runs of key "self-b": the pool
    // of "self-b" holds both kinds, ranked together in one claim.
    const ids = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        i % 2 === 0
          ? trigger("gt-target", { groups: ["self-b"], holdMs: 10 }, { concurrencyKey: "self-a", gates: [{ queue: "gt-emails", concurrencyKey: "self-b" }] })
          : trigger("gt-target", { groups: ["self-b"], holdMs: 10 }, { concurrencyKey: "self-b" }),
      ),
    );
    const done = allFinished(ids);
    const [a, b] = await Promise.all([samplePool("gt-emails", "self-a", done), samplePool("gt-emails", "self-b", done)]);
    await done;
    expect(a).toBeLessThanOrEqual(2);
    expect(b).toBeLessThanOrEqual(2);
    expect(most.get("self-b")).toBeLessThanOrEqual(2);
    expect(await statuses(ids)).toEqual(Array(24).fill("COMPLETED"));
  });

  it("a paused gate queue starts none of the runs gated on it until resumed; a run gated elsewhere goes on", async () => {
    expect((await setQueuePaused(te.engine, te.env.id, EMAILS, true, now())).paused).toBe(true);
    const held = [
      await trigger("gt-alpha", { groups: [] }, { gates: [{ queue: "gt-emails" }] }),
      await trigger("gt-beta", { groups: [] }, { gates: [{ queue: "gt-emails", concurrencyKey: "k" }] }),
    ];
    const free = await trigger("gt-alpha", { groups: [] }, { gates: [{ queue: "gt-x" }] });
    await claimsHaveRun();
    await allFinished([free]);
    expect(await statuses(held)).toEqual(["QUEUED", "QUEUED"]);
    expect((await setQueuePaused(te.engine, te.env.id, EMAILS, false, now())).paused).toBe(false);
    await allFinished(held);
    expect(await statuses(held)).toEqual(["COMPLETED", "COMPLETED"]);
  });

  it("a gated run's resume takes a slot of its gate again: it waits while the gate queue is full", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const waiter = await trigger("gt-alpha", { groups: ["emails-resume"], tokenId }, { gates: [{ queue: "gt-emails" }] });
    await Promise.race(workers.map((w) => w.worker.events.next("runSuspended", (e) => e.runId === waiter)));
    // While it waits it holds no slot: the gate queue's own runs take both.
    const own = [await trigger("gt-target", { groups: ["emails-resume"], held: true }), await trigger("gt-target", { groups: ["emails-resume"], held: true })];
    await eventually(async () => own.every((id) => releases.has(id)));
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
    await claimsHaveRun();
    const row = (await getRunRow(te, waiter)) as RunRow & { resume_due_at: Date | null };
    expect(row.status).toBe("WAITING");
    expect(row.resume_due_at).not.toBeNull();
    for (const id of own) releases.get(id)!();
    await allFinished([waiter, ...own]);
    expect(most.get("emails-resume")).toBeLessThanOrEqual(2);
    expect((await getRunRow(te, waiter)).status).toBe("COMPLETED");
  });

  it("runs of two queues gated on each other never deadlock their claims, and each pool holds one at a time", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const p: Payload = { groups: ["x-or-y"], holdMs: 5 };
      ids.push(i % 2 === 0 ? await trigger("gt-x", p, { gates: [{ queue: "gt-y" }] }) : await trigger("gt-y", p, { gates: [{ queue: "gt-x" }] }));
    }
    const done = allFinished(ids);
    const [px, py] = await Promise.all([samplePool("gt-x", "", done), samplePool("gt-y", "", done)]);
    await done;
    expect(px).toBeLessThanOrEqual(1);
    expect(py).toBeLessThanOrEqual(1);
    // Each run is in both pools: one at a time in all.
    expect(most.get("x-or-y")).toBe(1);
    expect(await statuses(ids)).toEqual(Array(30).fill("COMPLETED"));
  });

  it("a run with a gate and a named concurrency limit obeys both (its claim takes the gate queues' locks, then the named limits')", async () => {
    await overrideConcurrencyLimit(te.engine, te.env.id, "gt-named", { total: 1 }, now());
    const ids = await Promise.all(
      Array.from({ length: 24 }, (_, i) => {
        if (i % 3 === 0) return trigger("gt-target", { groups: ["emails-named"], holdMs: 10 });
        return trigger(i % 3 === 1 ? "gt-alpha" : "gt-beta", { groups: ["emails-named", "named"], holdMs: 5 }, { gates: [{ queue: "gt-emails" }], concurrency: ["gt-named"] });
      }),
    );
    const done = allFinished(ids);
    const named = (async () => {
      let max = 0;
      let stop = false;
      void done.finally(() => (stop = true));
      while (!stop) {
        const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE environment_id = $1 AND status = 'EXECUTING' AND 'gt-named' = ANY (concurrency_limits)`, [te.env.id]);
        max = Math.max(max, rows[0]!.n);
      }
      return max;
    })();
    const pool = await samplePool("gt-emails", "", done);
    await done;
    expect(await named).toBeLessThanOrEqual(1);
    expect(pool).toBeLessThanOrEqual(2);
    expect(most.get("named")).toBe(1);
    expect(most.get("emails-named")).toBeLessThanOrEqual(2);
    expect(await statuses(ids)).toEqual(Array(24).fill("COMPLETED"));
  });

  it("reported no error on either worker, and no claim deadlocked (withTransaction runs a deadlocked claim again: Postgres counts it)", async () => {
    expect(errors).toEqual([]);
    // A backend sends its counts when it exits: stop the workers, wait for their connections to end.
    for (const w of workers) await w.stop();
    await eventually(async () => {
      const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name IN ('svc-worker-claim', 'svc-test-worker')`);
      return rows[0]!.n === 0;
    });
    await te.db.pool.query(`SELECT pg_stat_clear_snapshot()`);
    const { rows } = await te.db.pool.query<{ deadlocks: number }>(`SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()`);
    expect(rows[0]!.deadlocks).toBe(0);
  });
});
