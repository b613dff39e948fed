// Whom a new job wakes (wakeWorkers): registry rows with their locks held by test connections, as a
// worker's LISTEN connection holds its own, and the NOTIFYs each channel heard when the inserting
// transaction committed.
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { BOSS_NOTIFY_CHANNEL, startQueueName, wakeChannel, wakeWorkers, type InsertedJobs } from "../src/index.ts";
import { pgBossDispatcher, type PgBossTestDispatcher } from "../src/testing.ts";

/** Notified after the waking transaction commits: Postgres delivers notifications in commit order. */
const SENTINEL = "svc_test_wake_sentinel";
const NOW = new Date("2026-11-25T07:00:00Z");

let te: TestEngine<PgBossTestDispatcher>;
let listener: pg.PoolClient;
/** Connections holding registered workers' locks (each stands for a worker's LISTEN connection). */
const holders: pg.PoolClient[] = [];
const heard: { channel: string; payload: string }[] = [];
let sentinelHeard: () => void = () => {};
let nextLock = 9_100_000;

beforeAll(async () => {
  te = await startTestEngine({ dispatcher: pgBossDispatcher({ max: 2 }) });
  listener = await te.db.pool.connect();
  listener.on("notification", (n) => (n.channel === SENTINEL ? sentinelHeard() : heard.push({ channel: n.channel, payload: n.payload ?? "" })));
  await listener.query(`LISTEN ${SENTINEL}`);
  await listener.query(`LISTEN "${BOSS_NOTIFY_CHANNEL}"`);
});
afterEach(async () => {
  await te.db.pool.query(`DELETE FROM workers`);
  for (const h of holders.splice(0)) {
    await h.query(`SELECT pg_advisory_unlock_all()`);
    h.release();
  }
});
afterAll(async () => {
  listener?.release();
  await te?.close();
});

/** A registered worker consuming `queues`; `present: false` leaves its lock unheld (its connection is gone). */
async function worker(id: string, queues: string[], options: { slots?: number; full?: boolean; present?: boolean } = {}): Promise<void> {
  const lock = nextLock++;
  if (options.present !== false) {
    const holder = await te.db.pool.connect();
    await holder.query(`SELECT pg_advisory_lock($1)`, [lock]);
    holders.push(holder);
  }
  await te.db.pool.query(
    `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, slots, queues, full_since)
     VALUES ($1, $2, '{}', 'test', $3, $4, $5, $6, $7)`,
    [id, te.env.id, lock, new Date(NOW.getTime() + 15_000), options.slots ?? 4, queues, options.full ? NOW : null],
  );
  await listener.query(`LISTEN "${wakeChannel(id)}"`);
}

/** Wakes for `jobs` (queue → count) in a transaction; what every channel heard, by channel. */
async function wake(jobs: Record<string, number>): Promise<Record<string, string[]>> {
  heard.length = 0;
  const sentinel = new Promise<void>((resolve) => (sentinelHeard = resolve));
  const inserted: InsertedJobs[] = Object.entries(jobs).map(([queue, count]) => ({ environmentId: te.env.id, queue, count }));
  await withTransaction(te.db.pool, (tx) => wakeWorkers(tx, inserted, NOW));
  await te.db.pool.query(`NOTIFY ${SENTINEL}`);
  await sentinel;
  const byChannel: Record<string, string[]> = {};
  for (const n of heard) (byChannel[n.channel] ??= []).push(n.payload);
  return byChannel;
}

describe("wakeWorkers", () => {
  it("wakes one worker with a free slot for one job, never a full one while one is free", async () => {
    await worker("worker_a", ["q"]);
    await worker("worker_b", ["q"]);
    await worker("worker_full", ["q"], { full: true });
    const woken = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const heardNow = await wake({ q: 1 });
      expect(Object.values(heardNow)).toEqual([["q"]]);
      woken.add(Object.keys(heardNow)[0]!);
    }
    // At random among the free ones: both, over 20 wake-ups (one in 2^19 to fail by chance).
    expect([...woken].sort()).toEqual([wakeChannel("worker_a"), wakeChannel("worker_b")]);
  });

  it("wakes free workers until their slots cover the jobs", async () => {
    for (const id of ["worker_a", "worker_b", "worker_c"]) await worker(id, ["q"], { slots: 4 });
    expect(Object.keys(await wake({ q: 4 }))).toHaveLength(1);
    expect(Object.keys(await wake({ q: 6 }))).toHaveLength(2);
    expect(Object.keys(await wake({ q: 100 }))).toHaveLength(3);
  });

  it("wakes every consumer when all are full (the first with a free slot takes the jobs)", async () => {
    await worker("worker_a", ["q"], { full: true });
    await worker("worker_b", ["q"], { full: true });
    expect(await wake({ q: 1 })).toEqual({ [wakeChannel("worker_a")]: ["q"], [wakeChannel("worker_b")]: ["q"] });
  });

  it("passes over workers that do not consume the queue or whose connection is gone", async () => {
    await worker("worker_other", ["other"]);
    await worker("worker_gone", ["q"], { present: false });
    await worker("worker_here", ["q"], { full: true });
    expect(await wake({ q: 1 })).toEqual({ [wakeChannel("worker_here")]: ["q"] });
  });

  it("announces on pg-boss's channel, to all, the queues no registered worker consumes", async () => {
    await worker("worker_gone", ["q"], { present: false });
    await worker("worker_a", ["other"]);
    expect(await wake({ q: 2, other: 1 })).toEqual({ [BOSS_NOTIFY_CHANNEL]: ["q"], [wakeChannel("worker_a")]: ["other"] });
  });

  it("names every queue a worker is woken for in one NOTIFY", async () => {
    await worker("worker_a", ["q", "r"]);
    const heardNow = await wake({ q: 1, r: 1 });
    expect(Object.keys(heardNow)).toEqual([wakeChannel("worker_a")]);
    expect(heardNow[wakeChannel("worker_a")]![0]!.split(" ").sort()).toEqual(["q", "r"]);
  });

  it("rides on pg-boss's insert: a dispatch to one queue is one statement, and wakes the worker", async () => {
    const queue = startQueueName(te.env.id, "task/folded");
    await te.queue.dispatcher.ensureQueue(queue);
    await worker("worker_a", [queue]);
    heard.length = 0;
    const sentinel = new Promise<void>((resolve) => (sentinelHeard = resolve));
    const statements: string[] = [];
    await withTransaction(te.db.pool, async (tx) => {
      const spy = { query: (q: { text: string; values: unknown[] }) => (statements.push(q.text), tx.query(q)) };
      await te.queue.dispatcher.dispatch(spy as never, [{ kind: "start", runId: "run_folded", environmentId: te.env.id, queueName: "task/folded" }], NOW);
    });
    await te.db.pool.query(`NOTIFY ${SENTINEL}`);
    await sentinel;
    expect(statements).toHaveLength(1);
    expect(heard).toEqual([{ channel: wakeChannel("worker_a"), payload: queue }]);
    const { rows } = await te.db.pool.query(`SELECT data->>'runId' AS run_id FROM pgboss.job WHERE name = $1`, [queue]);
    expect(rows).toEqual([{ run_id: "run_folded" }]);
  });
});
