// Runs made ready wake one worker (wakeWorkers), not every worker: covered with real workers on one
// database. A single trigger wakes one of three idle workers (or none: an offer needs no wake-up); a
// batch larger than one worker's slots wakes enough of them and every run completes once; a run
// whose woken worker is full, or whose notices all go elsewhere, is still taken by another worker's poll.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { triggerRun, triggerRunsInTransaction, wakeChannel, withTransaction } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let workers: TestWorker[] = [];
const finishedBy = new Map<string, string>();
const executions = new Map<string, number>();
/** Holds its slot until its gate opens. */
const gates = new Map<string, () => void>();

const quick = task({
  id: "quick",
  run: async (_p: unknown, { ctx }) => {
    executions.set(ctx.run.id, (executions.get(ctx.run.id) ?? 0) + 1);
    return 1;
  },
});
const gated = task({ id: "gated", run: async (_p: unknown, { ctx }) => new Promise<void>((resolve) => gates.set(ctx.run.id, resolve)) });

async function start(options: { concurrency: number; pollIntervalMs: number }): Promise<TestWorker> {
  const w = await startTestWorker(te, [quick, gated], options);
  w.worker.events.on("runFinished", (e) => finishedBy.set(e.runId, w.worker.id));
  workers.push(w);
  return w;
}

const row = (w: TestWorker) => te.db.pool.query(`SELECT queues, full_since FROM workers WHERE id = $1`, [w.worker.id]).then((r) => r.rows[0]);

beforeAll(async () => {
  te = await startTestEngine();
});
afterEach(async () => {
  for (const gate of gates.values()) gate();
  gates.clear();
  for (const w of workers) await w.stop();
  workers = [];
  await te.db.pool.query(`DROP TRIGGER IF EXISTS test_keep_free ON workers`);
});
afterAll(async () => {
  await te?.close();
});

describe("wake-ups", () => {
  it("wakes one of three idle workers for a run left in runs; an offered start wakes none", async () => {
    // Polls a minute apart: only a wake-up gets a run claimed in time.
    const three = [await start({ concurrency: 4, pollIntervalMs: 60_000 }), await start({ concurrency: 4, pollIntervalMs: 60_000 }), await start({ concurrency: 4, pollIntervalMs: 60_000 })];
    // Each registered the queues it claims from.
    expect((await row(three[0]!)).queues).toEqual(["task/quick", "task/gated"]);
    const heard = await listen(...three.map((w) => wakeChannel(w.worker.id)));
    try {
      // A run the trigger can offer goes to one worker with no wake-up at all.
      const offered = await triggerRun(te.engine, te.env, "quick", {});
      await eventually(async () => finishedBy.has(offered.id));
      expect(heard).toHaveLength(0);
      // One it does not offer but leaves in `runs` (a TTL) wakes one worker, which claims it.
      const inRuns = await triggerRun(te.engine, te.env, "quick", {}, { ttl: "1h" });
      await eventually(async () => finishedBy.has(inRuns.id));
      expect(heard.map((n) => n.payload)).toEqual(["task/quick"]);
      expect(finishedBy.get(inRuns.id)).toBe(heard[0]!.channel.slice("svc_wake_".length));
      expect((await getRunRow(te, inRuns.id)).status).toBe("COMPLETED");
    } finally {
      await heard.stop();
    }
  });

  it("wakes enough workers for a batch larger than one worker's slots, and completes every run once", async () => {
    for (let i = 0; i < 3; i++) await start({ concurrency: 4, pollIntervalMs: 60_000 });
    const results = await withTransaction(te.db.pool, (tx) =>
      triggerRunsInTransaction(te.engine, tx, te.env, Array.from({ length: 30 }, () => ({ taskIdentifier: "quick", payload: {} }))),
    );
    const ids = results.map((r) => r.id);
    // No poll helps within a minute: the wake-ups and the workers' own refills carry all 30.
    await eventually(async () => ids.every((id) => finishedBy.has(id)), 15_000);
    for (const id of ids) expect(executions.get(id)).toBe(1);
    const { rows } = await te.db.pool.query(`SELECT status, count(*)::int AS n FROM runs WHERE id = ANY($1) GROUP BY status`, [ids]);
    expect(rows).toEqual([{ status: "COMPLETED", n: 30 }]);
    // 30 runs, 4 slots each: all three were woken and took some.
    expect(new Set(ids.map((id) => finishedBy.get(id))).size).toBe(3);
  });

  it("leaves a run whose woken worker is full to another worker's poll", async () => {
    const full = await start({ concurrency: 1, pollIntervalMs: 60_000 });
    const holder = await triggerRun(te.engine, te.env, "gated", {});
    await eventually(async () => gates.has(holder.id));
    await eventually(async () => (await row(full)).full_since !== null);
    const other = await start({ concurrency: 4, pollIntervalMs: 200 });
    // The registry says it wrong both ways: the full worker looks free, the free one full (a row
    // that lags its worker). The wake-up goes to the full worker alone.
    await te.db.pool.query(`UPDATE workers SET full_since = now() WHERE id = $1`, [other.worker.id]);
    await te.db.pool.query(`UPDATE workers SET full_since = NULL WHERE id = $1`, [full.worker.id]);
    await te.db.pool.query(`CREATE OR REPLACE FUNCTION test_keep_free() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.full_since := NULL; RETURN NEW; END $$`);
    await te.db.pool.query(`CREATE TRIGGER test_keep_free BEFORE UPDATE ON workers FOR EACH ROW WHEN (NEW.id = '${full.worker.id}') EXECUTE FUNCTION test_keep_free()`);
    const heard = await listen(wakeChannel(full.worker.id), wakeChannel(other.worker.id));
    try {
      const { id } = await triggerRun(te.engine, te.env, "quick", {});
      await eventually(async () => finishedBy.has(id), 10_000);
      expect(finishedBy.get(id)).toBe(other.worker.id);
      expect(heard.map((n) => n.channel)).toEqual([wakeChannel(full.worker.id)]);
      // The holder still holds the full worker's only slot.
      expect(finishedBy.has(holder.id)).toBe(false);
    } finally {
      await heard.stop();
    }
  });

  it("gives a worker that hears no wake-up its runs by polling", async () => {
    const deaf = await start({ concurrency: 4, pollIntervalMs: 200 });
    // Every wake-up goes elsewhere: to a registered "worker" with room for all (its lock held by a
    // test connection) that never claims, while the real one's row says full. Triggers offer their
    // runs to it too; its 1 s lease lapses and they are queued again, which wakes it again.
    const ghost = await te.db.pool.connect();
    try {
      const { rows } = await te.db.pool.query<{ queues: string[] }>(`SELECT queues FROM workers WHERE id = $1`, [deaf.worker.id]);
      await ghost.query(`SELECT pg_advisory_lock(424242)`);
      await te.db.pool.query(
        `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, slots, queues, lease_ms)
         VALUES ('worker_ghost', $1, ARRAY['quick'], 'test-1', 424242, now() + interval '1 hour', 1000, $2, 1000)`,
        [te.env.id, rows[0]!.queues],
      );
      await te.db.pool.query(`UPDATE workers SET full_since = now() WHERE id = $1`, [deaf.worker.id]);
      const heard = await listen(wakeChannel(deaf.worker.id), wakeChannel("worker_ghost"));
      try {
        const ids = (await Promise.all(Array.from({ length: 5 }, () => triggerRun(te.engine, te.env, "quick", {})))).map((r) => r.id);
        await eventually(async () => ids.every((id) => finishedBy.get(id) === deaf.worker.id), 10_000);
        expect(heard.length).toBeGreaterThan(0);
        expect(heard.every((n) => n.channel === wakeChannel("worker_ghost"))).toBe(true);
      } finally {
        await heard.stop();
      }
    } finally {
      await te.db.pool.query(`DELETE FROM workers WHERE id = 'worker_ghost'`);
      ghost.release();
    }
  });
});

/** What arrives on `channels` from now on (and a way to stop listening). */
async function listen(...channels: string[]): Promise<pg.Notification[] & { stop(): Promise<void> }> {
  const client = await te.db.pool.connect();
  const heard: pg.Notification[] = [];
  client.on("notification", (n) => heard.push(n));
  for (const channel of channels) await client.query(`LISTEN "${channel}"`);
  return Object.assign(heard, {
    async stop() {
      for (const channel of channels) await client.query(`UNLISTEN "${channel}"`);
      client.release();
    },
  });
}
