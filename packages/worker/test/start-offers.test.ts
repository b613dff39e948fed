// Start offers: the transaction that triggers a run offers its first attempt, already claimed, to a
// live worker of its task with a free slot, on that worker's own channel (as a completion offers a
// resume). Covered here: the offer itself, a worker that has no free slot (it gives the start back:
// QUEUED again, then claimed from runs), an offer nobody runs (its worker's lease lapses: a crashed
// attempt), a payload too large for a NOTIFY, and the runs that are never offered (limited
// queues, TTLs, large batches: claimed from runs), and the offer's lease: the worker's own, with no
// write between the trigger and the ending.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool } from "@svc/runtime/db";
import { FakeClock, lapsedLeases, triggerRun, triggerRunsInTransaction, withTransaction } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-29T10:00:00Z"));
let te: TestEngine;

const quick = task({ id: "quick", run: async (payload: { n?: number; filler?: string }) => ({ n: payload.n ?? 0, size: payload.filler?.length ?? 0 }) });
const limited = task({ id: "limited", queue: { name: "limited-queue", concurrencyLimit: 1 }, run: async () => "limited" });
const gates = new Map<string, () => void>();
const busy = task({ id: "busy", run: async (_p: unknown, { ctx }) => new Promise<void>((resolve) => gates.set(ctx.run.id, resolve)) });

/** What a run of `peek` saw of its own row while its code ran (`untouched`: still the inserting transaction's row version). */
const peeked = new Map<string, { offered_at: Date | null; lease_expires_at: Date; status: string; untouched: boolean }>();
const peek = task({
  id: "peek",
  run: async (_p: unknown, { ctx }) => {
    const { rows } = await te.db.pool.query(
      `SELECT offered_at, lease_expires_at, status, xmin::text::bigint = change_xid::text::bigint % 4294967296 AS untouched FROM runs WHERE id = $1`,
      [ctx.run.id],
    );
    peeked.set(ctx.run.id, rows[0]);
    return "peeked";
  },
});

const attemptRows = async (runId: string) => (await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [runId])).rows;

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("start offers", () => {
  let tw: TestWorker;
  beforeAll(async () => {
    tw = await startTestWorker(te, [quick, limited], { timerLoop: false });
  });
  afterAll(async () => {
    await tw?.stop();
  });

  it("hands a triggered run to the live worker with a free slot, claimed", async () => {
    const started = tw.worker.events.next("runStarted", (e) => e.runId !== "");
    const { id } = await triggerRun(te.engine, te.env, "quick", { n: 1 });
    // Claimed for the worker in the trigger's own transaction.
    expect(await getRunRow(te, id)).toMatchObject({ status: "EXECUTING", attempt_number: 1 });
    expect(await started).toMatchObject({ runId: id, via: "offer", attempt: 1, replayedEntries: 0 });
    const finished = await tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect(finished.status).toBe("COMPLETED");
    const row = await getRunRow(te, id);
    expect(row).toMatchObject({ status: "COMPLETED", attempt_number: 1, worker_id: tw.worker.id, offered_at: null, offered_start: false });
    expect(row.started_at).not.toBeNull();
    expect(await attemptRows(id)).toEqual([{ number: 1, status: "COMPLETED" }]);
  });

  it("offers a run whose payload does not fit in a NOTIFY by its claim token: the worker loads it", async () => {
    const filler = "x".repeat(20_000);
    const started = tw.worker.events.next("runStarted", (e) => e.runId !== "");
    const { id } = await triggerRun(te.engine, te.env, "quick", { n: 2, filler });
    expect(await started).toMatchObject({ runId: id, via: "offer" });
    await tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect(await getRunRow(te, id)).toMatchObject({ status: "COMPLETED", output: JSON.stringify({ json: { n: 2, size: 20_000 } }) });
  });

  it("offers nothing it cannot: a queue with a concurrencyLimit, a TTL and a batch larger than 16 wait in runs; a concurrency key alone is offered", async () => {
    const viaOf = new Map<string, string | undefined>();
    tw.worker.events.on("runStarted", (e) => viaOf.set(e.runId, e.via));
    const offered = [await triggerRun(te.engine, te.env, "quick", {}, { concurrencyKey: "k" })];
    const inRuns = [await triggerRun(te.engine, te.env, "limited", {}), await triggerRun(te.engine, te.env, "quick", {}, { ttl: "1h" })];
    const batch = await withTransaction(te.db.pool, (tx) =>
      triggerRunsInTransaction(te.engine, tx, te.env, Array.from({ length: 17 }, (_, n) => ({ taskIdentifier: "quick", payload: { n } }))),
    );
    inRuns.push(...batch);
    for (const { id } of [...offered, ...inRuns]) {
      await eventually(async () => (await getRunRow(te, id)).status === "COMPLETED");
    }
    for (const { id } of offered) expect(viaOf.get(id), id).toBe("offer");
    for (const { id } of inRuns) expect(viaOf.get(id), id).toBe("claimed");
  });
});

describe("start offers given back", () => {
  it("gives a start back when it has no free slot: the run is QUEUED again as if never claimed, and a claim from runs starts it", async () => {
    const full = await startTestWorker(te, [quick, busy], { concurrency: 1, timerLoop: false });
    try {
      const { id: holder } = await triggerRun(te.engine, te.env, "busy", {});
      await eventually(async () => gates.has(holder));
      // The registry row still says the worker has a free slot (its full flag not yet written), so
      // the trigger offers it the run; the worker is full and gives it back.
      await te.db.pool.query(`UPDATE workers SET full_since = NULL WHERE id = $1`, [full.worker.id]);
      const givenBack = full.worker.events.next("offerGivenBack", (e) => e.runId !== "");
      const { id } = await triggerRun(te.engine, te.env, "quick", { n: 3 });
      expect(await givenBack).toMatchObject({ runId: id, reason: "full" });
      expect(await getRunRow(te, id)).toMatchObject({ status: "QUEUED", attempt_number: 0, claim_token: null, offered_at: null, offered_start: false, started_at: null, available_at: null });
      // Claimable at once: the worker claims it from `runs` once a slot is free.
      const started = full.worker.events.next("runStarted", (e) => e.runId === id);
      gates.get(holder)!();
      expect(await started).toMatchObject({ via: "claimed", attempt: 1 });
      expect((await full.worker.events.next("runFinished", (e) => e.runId === id)).status).toBe("COMPLETED");
      expect(await attemptRows(id)).toEqual([{ number: 1, status: "COMPLETED" }]);
    } finally {
      await full.stop();
    }
  });

  it("takes back an offer its worker never runs when that worker's lease lapses: a crashed attempt, and a claim from runs starts the next", async () => {
    await te.db.pool.query(`DELETE FROM workers`);
    // A worker that is live to the registry but takes nothing (a stalled process): its row names
    // a lock that a connection listening to nothing holds.
    const stalled = createPool(te.db.url, { max: 1, onError: () => {} });
    const client = await stalled.connect();
    await client.query(`SELECT pg_advisory_lock(4343)`);
    await client.query(
      `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, lease_ms) VALUES ('worker_stalled', $1, '{quick}', 'test-0', 4343, $2, 5000)`,
      [te.env.id, new Date(clock.now().getTime() + 60_000)],
    );
    try {
      const { id } = await triggerRun(te.engine, te.env, "quick", { n: 4 });
      expect(await getRunRow(te, id)).toMatchObject({ status: "EXECUTING", worker_id: "worker_stalled", attempt_number: 1, offered_start: true });
      clock.advance(4_000);
      expect(await lapsedLeases.fire(te.engine, clock.now(), 100)).toBe(0);
      clock.advance(1_000);
      expect(await lapsedLeases.fire(te.engine, clock.now(), 100)).toBe(1);
      expect(await getRunRow(te, id)).toMatchObject({ status: "QUEUED", attempt_number: 1, claim_token: null, offered_at: null, offered_start: false, lease_expires_at: null });
      // The lapse cannot tell a worker that never ran it from one that crashed running it.
      expect(await attemptRows(id)).toEqual([{ number: 1, status: "CRASHED" }]);
      await te.db.pool.query(`DELETE FROM workers WHERE id = 'worker_stalled'`);
      const next = await startTestWorker(te, [quick], { timerLoop: false });
      try {
        expect((await next.worker.events.next("runFinished", (e) => e.runId === id)).status).toBe("COMPLETED");
        expect(await getRunRow(te, id)).toMatchObject({ attempt_number: 2 });
      } finally {
        await next.stop();
      }
    } finally {
      client.release();
      await stalled.end();
    }
  });
});

describe("an offered run's lease", () => {
  const LEASE_MS = 20_000;
  let tw: TestWorker;
  beforeAll(async () => {
    await te.db.pool.query(`DELETE FROM workers`);
    tw = await startTestWorker(te, [peek], { timerLoop: false, leaseMs: LEASE_MS });
  });
  afterAll(async () => {
    await tw?.stop();
  });

  it("is its worker's own from the offer on: nothing is written between the trigger and the run's ending", async () => {
    const triggeredAt = clock.now();
    const { id } = await triggerRun(te.engine, te.env, "peek", {});
    expect((await tw.worker.events.next("runFinished", (e) => e.runId === id)).status).toBe("COMPLETED");
    // What the code saw of its run: the row as the trigger's insert wrote it (no write since),
    // with the lease the worker's registry row names.
    expect(peeked.get(id)).toMatchObject({ status: "EXECUTING", untouched: true });
    expect(peeked.get(id)!.offered_at).not.toBeNull();
    expect(peeked.get(id)!.lease_expires_at.getTime()).toBe(triggeredAt.getTime() + LEASE_MS);
    expect(await getRunRow(te, id)).toMatchObject({ status: "COMPLETED", offered_at: null, offered_start: false, claim_token: null, lease_expires_at: null, attempt_number: 1 });
    expect(await attemptRows(id)).toEqual([{ number: 1, status: "COMPLETED" }]);
  });
});
