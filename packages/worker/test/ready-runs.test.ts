// Runs are claimed straight from `runs`, the one queue: the trigger only wakes workers. Covered
// here: a batch larger than the worker's slots (all claimed, oldest first, each once), several
// workers sharing a backlog, runs of limited queues (claimed by their queue's claim, within the
// limit; a concurrency key alone changes nothing), runs moved when a queue gets a limit, a claimed run
// whose worker died (its lease lapses, the next attempt runs), a TTL that passed (never claimed:
// the expiry pass ends it), and a draining worker (claims nothing).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_IN_DUE_WORK, FakeClock, lapsedLeases, triggerRun, triggerRunsInTransaction, withTransaction } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const order: string[] = [];
const executions = new Map<string, number>();
const gates = new Map<string, () => void>();

const plain = task({
  id: "plain",
  run: async (_p: unknown, { ctx }) => {
    order.push(ctx.run.id);
    executions.set(ctx.run.id, (executions.get(ctx.run.id) ?? 0) + 1);
    return "done";
  },
});
const limited = task({ id: "limited-q", queue: { name: "limited-q", concurrencyLimit: 2 }, run: async () => "limited" });
const lateRunning = new Map<string, () => void>();
const lateDone = new Set<string>();
const lateLimited = task({
  id: "late-limited",
  queue: { concurrencyLimit: 1 },
  run: async (_p: unknown, { ctx }) => {
    await new Promise<void>((resolve) => lateRunning.set(ctx.run.id, resolve));
    lateDone.add(ctx.run.id);
  },
});
const held = task({ id: "held", run: async (_p: unknown, { ctx }) => new Promise<void>((resolve) => gates.set(ctx.run.id, resolve)) });

const triggerMany = (taskIdentifier: string, n: number, options = {}) =>
  withTransaction(te.db.pool, (tx) => triggerRunsInTransaction(te.engine, tx, te.env, Array.from({ length: n }, (_, i) => ({ taskIdentifier, payload: { i }, options }))));
const finished = (ids: string[]) =>
  eventually(async () => {
    const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'COMPLETED'`, [ids]);
    return rows[0]!.n === ids.length;
  }, 30_000);

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  await te?.close();
});

describe("runs claimed from runs", () => {
  it("claims a batch larger than the worker's slots from runs, oldest first, each run once", async () => {
    // Triggered before any worker runs: nothing is offered, every run waits in `runs`.
    const runs = await triggerMany("plain", 40);
    const ids = runs.map((r) => r.id);
    order.length = 0;
    const w = await startTestWorker(te, [plain], { concurrency: 4, timerLoop: false, pollIntervalMs: 60_000 });
    try {
      await finished(ids);
      for (const id of ids) expect(executions.get(id)).toBe(1);
      // Four slots: the claims start the runs in the order they were queued (one trigger: one
      // created_at, then their ids), four at a time.
      expect(order.slice(0, 4).sort()).toEqual([...ids].sort().slice(0, 4));
      const rows = (await te.db.pool.query(`SELECT attempt_number, worker_id FROM runs WHERE id = ANY($1)`, [ids])).rows;
      expect(rows.every((r) => r.attempt_number === 1 && r.worker_id === w.worker.id)).toBe(true);
      const attempts = (await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM run_attempts WHERE run_id = ANY($1) AND status = 'COMPLETED'`, [ids])).rows[0]!.n;
      expect(attempts).toBe(40);
    } finally {
      await w.stop();
    }
  });

  it("shares a backlog between workers woken by the trigger, without polls", async () => {
    const a = await startTestWorker(te, [plain], { concurrency: 4, timerLoop: false, pollIntervalMs: 60_000 });
    const b = await startTestWorker(te, [plain], { concurrency: 4, timerLoop: false, pollIntervalMs: 60_000 });
    try {
      const by = new Map<string, string>();
      for (const w of [a, b]) w.worker.events.on("runStarted", (e) => e.via === "claimed" && by.set(e.runId, w.worker.id));
      const ids = (await triggerMany("plain", 60)).map((r) => r.id);
      await finished(ids);
      for (const id of ids) expect(executions.get(id)).toBe(1);
      expect(new Set(by.values()).size).toBe(2);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it("leaves runs of a queue with a concurrencyLimit to that queue's claim; a concurrency key in a queue without one is plain", async () => {
    const w = await startTestWorker(te, [plain, limited], { concurrency: 4, timerLoop: false });
    try {
      const keyed = await triggerMany("plain", 20, { concurrencyKey: "k" });
      const limitedRuns = await triggerMany("limited-q", 20);
      const flags = async (runs: { id: string }[]) => (await te.db.pool.query(`SELECT DISTINCT claim_from_runs FROM runs WHERE id = ANY($1)`, [runs.map((r) => r.id)])).rows;
      expect(await flags(keyed)).toEqual([{ claim_from_runs: true }]);
      expect(await flags(limitedRuns)).toEqual([{ claim_from_runs: false }]);
      await finished([...keyed, ...limitedRuns].map((r) => r.id));
    } finally {
      await w.stop();
    }
  });

  it("moves runs queued while their queue had no limit to the queue's claim when a worker declares one, and keeps it", async () => {
    // No worker has registered the task: its queue has no limit yet, and the runs wait in `runs`.
    const ids = (await triggerMany("late-limited", 6)).map((r) => r.id);
    const flags = (await te.db.pool.query(`SELECT claim_from_runs FROM runs WHERE id = ANY($1)`, [ids])).rows;
    expect(flags.every((r) => r.claim_from_runs === true)).toBe(true);
    const w = await startTestWorker(te, [lateLimited], { concurrency: 4, timerLoop: false });
    try {
      const rows = (await te.db.pool.query(`SELECT claim_from_runs FROM runs WHERE id = ANY($1)`, [ids])).rows;
      expect(rows.every((r) => r.claim_from_runs === false)).toBe(true);
      // One at a time, though the worker has four slots.
      await eventually(async () => lateRunning.size === 1);
      expect(lateRunning.size).toBe(1);
      while (lateDone.size < ids.length) {
        await eventually(async () => lateRunning.size === 1);
        const { rows: executing } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'EXECUTING'`, [ids]);
        expect(executing[0]!.n).toBeLessThanOrEqual(1);
        const [id, open] = [...lateRunning][0]!;
        lateRunning.delete(id);
        open();
        await eventually(async () => lateDone.has(id));
      }
      await finished(ids);
    } finally {
      await w.stop();
    }
  });

  it("leaves a run whose TTL passed to the expiry pass", async () => {
    const clock = new FakeClock(new Date("2026-11-29T12:00:00Z"));
    const own = await startTestEngine({ clock });
    try {
      const { id } = await triggerRun(own.engine, own.env, "plain", {}, { ttl: "10s" });
      clock.advance(11_000);
      const w = await startTestWorker(own, [plain], { timerLoop: false, pollIntervalMs: 60_000 });
      try {
        // Its first claim pass ran at start and passed the run by.
        await w.worker.timers.tick();
        expect(await getRunRow(own, id)).toMatchObject({ status: "EXPIRED", attempt_number: 0 });
        const expiring = BUILT_IN_DUE_WORK.find((w) => w.name === "expiring-runs")!;
        expect(await expiring.fire(own.engine, clock.now(), 100)).toBe(0);
      } finally {
        await w.stop();
      }
    } finally {
      await own.close();
    }
  });

  it("takes a claimed run back when its worker dies: the lease lapses and the next attempt runs", async () => {
    const clock = new FakeClock(new Date("2026-11-29T12:00:00Z"));
    const own = await startTestEngine({ clock });
    try {
      // Triggered with no worker live: not offered, it waits in `runs`.
      const run = await triggerRun(own.engine, own.env, "held", {});
      const dying = await startTestWorker(own, [held], { timerLoop: false, pollIntervalMs: 60_000, leaseMs: 5_000 });
      await eventually(async () => gates.has(run.id));
      expect(await getRunRow(own, run.id)).toMatchObject({ status: "EXECUTING", attempt_number: 1 });
      await dying.kill();
      clock.advance(6_000);
      expect(await lapsedLeases.fire(own.engine, clock.now(), 100)).toBeGreaterThan(0);
      expect(await getRunRow(own, run.id)).toMatchObject({ status: "QUEUED", attempt_number: 1 });
      gates.clear();
      const next = await startTestWorker(own, [held], { timerLoop: false, pollIntervalMs: 60_000 });
      try {
        await eventually(async () => gates.has(run.id));
        expect(await getRunRow(own, run.id)).toMatchObject({ status: "EXECUTING", attempt_number: 2, worker_id: next.worker.id });
        const attempts = (await own.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [run.id])).rows;
        expect(attempts).toEqual([{ number: 1, status: "CRASHED" }]);
        for (const open of gates.values()) open();
      } finally {
        await next.stop();
      }
    } finally {
      await own.close();
    }
  });

  it("claims nothing once draining", async () => {
    const w = await startTestWorker(te, [held], { concurrency: 2, timerLoop: false, pollIntervalMs: 60_000 });
    gates.clear();
    const first = await triggerMany("held", 20);
    await eventually(async () => gates.size === 2);
    const draining = w.stop();
    for (const open of gates.values()) open();
    await draining;
    const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'QUEUED'`, [first.map((r) => r.id)]);
    expect(rows[0]!.n).toBe(18);
  });
});
