// Resume offers: a completion hands the run it wakes to one live worker, already claimed for it,
// with the run and its ledger in the NOTIFY (migration 0018). Covered here: the offer itself, the
// runs of one completion each with its own ledger, a payload too large for a NOTIFY, a worker whose
// LISTEN connection is gone (never chosen), an offer nobody runs (its worker's lease lapses, as
// any execution's) and the registry's upkeep.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool } from "@svc/runtime/db";
import { completeToken, createToken, FakeClock, lapsedLeases, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, triggerAndAwait, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let te: TestEngine;
const seen = new Map<string, { workerId: string | null; leased: boolean; output: unknown; payloadSize: number; createdAt: number }>();

const offered = task({
  id: "offered",
  run: async (payload: { tokenId: string; filler?: string }, { ctx }) => {
    const token = await wait.forToken<{ n: number }>(payload.tokenId);
    const { rows } = await te.db.pool.query<{ worker_id: string | null; leased: boolean }>(
      `SELECT worker_id, lease_expires_at IS NOT NULL AS leased FROM runs WHERE id = $1`,
      [ctx.run.id],
    );
    seen.set(ctx.run.id, { workerId: rows[0]!.worker_id, leased: rows[0]!.leased, output: token.ok ? token.output : null, payloadSize: payload.filler?.length ?? 0, createdAt: ctx.run.createdAt.getTime() });
    return "resumed";
  },
});

/** Steps, a wait that resolved earlier and a keyed wait (epoch -1): the ledger an offer carries. */
let sideEffects = 0;
const replays = task({
  id: "replays",
  run: async (payload: { first: string; keyed: string; last: string }) => {
    const side = await step.run("side", async () => ++sideEffects);
    const first = await wait.forToken<{ n: number }>(payload.first);
    const keyed = await wait.forToken<{ n: number }>(payload.keyed, { idempotencyKey: "keyed-wait" });
    const last = await wait.forToken<{ n: number }>(payload.last);
    return { side, outputs: [first.ok && first.output.n, keyed.ok && keyed.output.n, last.ok && last.output.n] };
  },
});

/** A step right after its wait: under a withdrawn offer, it must not run. */
const stepRuns = new Map<string, number>();
const stepAfterWait = task({
  id: "step-after-wait",
  run: async (payload: { tokenId: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    await step.run("effect", async () => stepRuns.set(ctx.run.id, (stepRuns.get(ctx.run.id) ?? 0) + 1));
    return "done";
  },
});

/** `steps` steps, then a wait on a token other runs wait on too: each run's ledger is its own. */
const stepsThenWait = task({
  id: "steps-then-wait",
  run: async (payload: { steps: number; tokenId: string }) => {
    for (let i = 0; i < payload.steps; i++) await step.run(`s${i}`, async () => i);
    await wait.forToken(payload.tokenId);
    return payload.steps;
  },
});

const gates = new Map<string, () => void>();
const busy = task({ id: "busy", run: async (_p: unknown, { ctx }) => new Promise<void>((resolve) => gates.set(ctx.run.id, resolve)) });

/** Starts a `busy` run and waits until it holds a slot of whichever worker took it. */
async function occupySlot(): Promise<string> {
  const { id } = await triggerRun(te.engine, te.env, "busy", {});
  await eventually(async () => gates.has(id));
  return id;
}

async function suspended(w: TestWorker, payload: { filler?: string } = {}): Promise<{ id: string; tokenId: string }> {
  const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
  const { id } = await triggerAndAwait([w], "runSuspended", () => triggerRun(te.engine, te.env, "offered", { tokenId, ...payload }));
  return { id, tokenId };
}
const complete = (tokenId: string, output: unknown = { n: 7 }) =>
  withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, output));
const registered = async () => (await te.db.pool.query<{ id: string }>(`SELECT id FROM workers ORDER BY id`)).rows.map((r) => r.id);
const attemptRows = async (runId: string) => (await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [runId])).rows;

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("resume offers", () => {
  let tw: TestWorker;
  beforeAll(async () => {
    tw = await startTestWorker(te, [offered, replays, stepAfterWait, stepsThenWait], { timerLoop: false });
  });
  afterAll(async () => {
    await tw?.stop();
  });

  it("hands a completed token's run to the live worker, claimed, with its ledger: the code continues without a claim of its own", async () => {
    expect(await registered()).toEqual([tw.worker.id]);
    const { id, tokenId } = await suspended(tw);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const result = await complete(tokenId);
    expect(result).toMatchObject({ changed: true, resumedRunIds: [id] });
    expect(await resumed).toMatchObject({ via: "offer", attempt: 1, replayedEntries: 1 });
    expect((await done).status).toBe("COMPLETED");
    // The code after the wait got the token's output from the ledger the offer carried.
    const row = await getRunRow(te, id);
    // The run's columns came through JSON: its timestamps are Dates again, to the millisecond.
    expect(seen.get(id)).toEqual({ workerId: tw.worker.id, leased: true, output: { n: 7 }, payloadSize: 0, createdAt: row.created_at.getTime() });
    expect(row).toMatchObject({ status: "COMPLETED", attempt_number: 1, worker_id: tw.worker.id, worker_version: "test-1", resume_due_at: null });
  });

  it("carries the whole ledger: steps, earlier waits and keyed waits replay from the offer, each step once", async () => {
    const [first, keyed, last] = await Promise.all([0, 1, 2].map(async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id));
    let next = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "replays", { first, keyed, last });
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    for (const [i, tokenId] of [first, keyed, last].entries()) {
      expect((await next).runId).toBe(id);
      next = tw.worker.events.next("runSuspended");
      const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
      await complete(tokenId!, { n: i + 1 });
      // The step, then every wait up to the one just completed.
      expect(await resumed).toMatchObject({ via: "offer", replayedEntries: i + 2 });
    }
    next.catch(() => {});
    expect((await finished).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual({ side: 1, outputs: [1, 2, 3] });
    expect(sideEffects).toBe(1);
  });

  it("offers each run a completion wakes with its own ledger", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const runs: { id: string; steps: number }[] = [];
    for (const steps of [1, 3, 2]) {
      const { id } = await triggerRun(te.engine, te.env, "steps-then-wait", { steps, tokenId });
      await tw.worker.events.next("runSuspended", (e) => e.runId === id);
      runs.push({ id, steps });
    }
    const resumed = runs.map(({ id }) => tw.worker.events.next("runResumed", (e) => e.runId === id));
    const finished = runs.map(({ id }) => tw.worker.events.next("runFinished", (e) => e.runId === id));
    const result = await complete(tokenId);
    expect(result.changed && [...result.resumedRunIds].sort()).toEqual(runs.map((r) => r.id).sort());
    // Each replays its own steps and the wait: a ledger handed to another run would not match.
    expect(await Promise.all(resumed)).toMatchObject(runs.map((r) => ({ via: "offer", replayedEntries: r.steps + 1 })));
    expect((await Promise.all(finished)).map((e) => e.status)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED"]);
  });

  it("offers a run whose payload does not fit in a NOTIFY by its claim token, and the worker loads it", async () => {
    const filler = "x".repeat(20_000);
    const { id, tokenId } = await suspended(tw, { filler });
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId, { n: 8 });
    expect((await resumed).via).toBe("offer");
    expect((await done).status).toBe("COMPLETED");
    expect(seen.get(id)).toMatchObject({ output: { n: 8 }, payloadSize: 20_000 });
  });

  it("is offered resumes on its new LISTEN connection once the old one was dropped", async () => {
    const lockOf = async () => (await te.db.pool.query<{ listener_lock: string }>(`SELECT listener_lock FROM workers WHERE id = $1`, [tw.worker.id])).rows[0]!.listener_lock;
    const before = await lockOf();
    const { rows } = await te.db.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-worker-listen'`,
    );
    expect(rows).toHaveLength(1);
    await te.db.pool.query(`SELECT pg_terminate_backend($1)`, [rows[0]!.pid]);
    // Re-registered under the new connection's lock; the old lock went with the old connection.
    await eventually(async () => (await lockOf()) !== before);
    const { rows: free } = await te.db.pool.query<{ taken: boolean }>(`SELECT pg_try_advisory_xact_lock_shared($1::bigint) AS taken`, [before]);
    expect(free[0]!.taken).toBe(true);
    const { id, tokenId } = await suspended(tw);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    // Listened for before the completion: the run may finish before its commit's reply arrives.
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId);
    expect((await resumed).via).toBe("offer");
    await finished;
  });

  it("writes nothing for an offer canceled before it arrived: the execution is abandoned", async () => {
    const { id, tokenId } = await suspended(tw);
    // The completion and the cancel in one transaction: the worker hears the offer only after both.
    const aborted = tw.worker.events.next("runAbandoned", (e) => e.runId === id).catch(() => null);
    await withTransaction(te.db.pool, async (tx) => {
      await completeToken(te.engine, tx, tokenId, {});
      await tx.query(`UPDATE runs SET status = 'CANCELED', claim_token = NULL, lease_expires_at = NULL WHERE id = $1`, [id]);
    });
    expect(await aborted).toMatchObject({ runId: id });
    expect((await getRunRow(te, id)).status).toBe("CANCELED");
    expect(seen.has(id)).toBe(true); // its code ran, and its ending was fenced
  });
  it("writes nothing under an offer withdrawn before it was taken: the step after the wait never runs", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const waiting = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "step-after-wait", { tokenId });
    expect((await waiting).runId).toBe(id);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await withTransaction(te.db.pool, async (tx) => {
      await completeToken(te.engine, tx, tokenId, {});
      await tx.query(`UPDATE runs SET status = 'CANCELED', claim_token = NULL, lease_expires_at = NULL, offered_at = NULL WHERE id = $1`, [id]);
    });
    expect(["canceled", "fenced"]).toContain((await abandoned).reason);
    expect(stepRuns.get(id)).toBeUndefined();
    const { rows } = await te.db.pool.query(`SELECT kind FROM run_ledger WHERE run_id = $1`, [id]);
    expect(rows).toEqual([{ kind: "token" }]);
    // The cancel's attempt is closed as after any cancel of a running attempt.
    expect(await attemptRows(id)).toEqual([{ number: 1, status: "CANCELED" }]);
  });
});

describe("choosing a worker", () => {
  it("never offers to a worker whose LISTEN connection is gone, though its row is still there (kill -9)", async () => {
    const dead = await startTestWorker(te, [offered], { timerLoop: false });
    const [early, later] = [await suspended(dead), await suspended(dead)];
    await dead.kill();
    expect(await registered()).toEqual([dead.worker.id]);
    // No live worker has the task: the resume is announced to all and marked due at once.
    const completedAt = clock.now();
    await complete(early.tokenId);
    expect(await getRunRow(te, early.id)).toMatchObject({ status: "WAITING", offered_at: null, resume_due_at: completedAt });

    const live = await startTestWorker(te, [offered], { timerLoop: false });
    // The resume nobody was offered is claimed from `runs` by the next worker of its task.
    await eventually(async () => (await getRunRow(te, early.id)).status === "COMPLETED");
    expect((await getRunRow(te, early.id)).worker_id).toBe(live.worker.id);
    const resumed = live.worker.events.next("runResumed", (e) => e.runId === later.id);
    const finished = live.worker.events.next("runFinished", (e) => e.runId === later.id);
    await complete(later.tokenId);
    expect(await resumed).toMatchObject({ via: "offer" });
    await finished;
    expect((await getRunRow(te, later.id)).worker_id).toBe(live.worker.id);
    await live.stop();
    // drain() took the live worker out of the registry; the killed one's row stays until it ages out.
    expect(await registered()).toEqual([dead.worker.id]);
    await te.db.pool.query(`DELETE FROM workers`);
  });

  it("takes an offer back from a worker that never runs it when its worker's lease lapses: a crashed attempt, and the next one resumes from runs", async () => {
    const first = await startTestWorker(te, [offered], { timerLoop: false });
    const { id, tokenId } = await suspended(first);
    await first.stop();
    // A worker that is live to the registry but takes nothing (a stalled process): its row names
    // a lock that a connection listening to nothing holds.
    const stalled = createPool(te.db.url, { max: 1, onError: () => {} });
    const client = await stalled.connect();
    await client.query(`SELECT pg_advisory_lock(4242)`);
    await client.query(
      `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, lease_ms) VALUES ('worker_stalled', $1, '{offered}', 'test-0', 4242, $2, 8000)`,
      [te.env.id, new Date(clock.now().getTime() + 60_000)],
    );
    try {
      await complete(tokenId);
      expect(await getRunRow(te, id)).toMatchObject({ status: "EXECUTING", worker_id: "worker_stalled", attempt_number: 1 });
      expect((await getRunRow(te, id)).offered_at).not.toBeNull();
      // The offer holds that worker's lease (lease_ms): nothing lapses before it ends.
      clock.advance(7_999);
      expect(await lapsedLeases.fire(te.engine, clock.now(), 100)).toBe(0);
      clock.advance(1);
      expect(await lapsedLeases.fire(te.engine, clock.now(), 100)).toBe(1);
      // As for any execution whose worker went quiet: the lapse cannot tell a worker that never
      // ran the offer from one that crashed running it, so the attempt counts.
      expect(await getRunRow(te, id)).toMatchObject({ status: "QUEUED", attempt_number: 1, claim_token: null, offered_at: null, lease_expires_at: null });
      expect(await attemptRows(id)).toEqual([{ number: 1, status: "CRASHED" }]);
      await te.db.pool.query(`DELETE FROM workers WHERE id = 'worker_stalled'`);
      // The next worker claims it from `runs` (at its start): a new attempt that replays the ledger.
      const next = await startTestWorker(te, [offered], { timerLoop: false });
      await eventually(async () => (await getRunRow(te, id)).status === "COMPLETED");
      expect(await getRunRow(te, id)).toMatchObject({ worker_id: next.worker.id, attempt_number: 2 });
      expect(seen.get(id)).toMatchObject({ output: { n: 7 } });
      await next.stop();
    } finally {
      client.release();
      await stalled.end();
    }
  });

  it("passes on an offer it has no free slot for: the run is due at once, and is claimed when a slot frees", async () => {
    const full = await startTestWorker(te, [offered, busy], { concurrency: 1, timerLoop: false });
    const { id, tokenId } = await suspended(full);
    const holder = await occupySlot();
    const completedAt = clock.now();
    await complete(tokenId);
    // Given back at once: waiting again, same attempt, its resume due now (no grace to wait out).
    const row = await eventually(async () => {
      const r = await getRunRow(te, id);
      return r.status === "WAITING" && r;
    });
    expect(row).toMatchObject({ attempt_number: 1, claim_token: null, offered_at: null, resume_due_at: completedAt });
    const resumed = full.worker.events.next("runResumed", (e) => e.runId === id);
    const finished = full.worker.events.next("runFinished", (e) => e.runId === id);
    gates.get(holder)!();
    expect(await resumed).toMatchObject({ attempt: 1 });
    expect(["claimed", "fast-path"]).toContain((await resumed).via);
    expect((await finished).status).toBe("COMPLETED");
    await full.stop();
  });

  it("gets a run offered to a busy worker to a free one", async () => {
    const full = await startTestWorker(te, [offered, busy], { concurrency: 1, timerLoop: false });
    const { id, tokenId } = await suspended(full);
    const holder = await occupySlot();
    const free = await startTestWorker(te, [offered], { timerLoop: false });
    // Whichever the completion picks, the free worker runs it: directly, or after the busy one
    // passed it on with a NOTIFY to all.
    const resumed = free.worker.events.next("runResumed", (e) => e.runId === id);
    const finished = free.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId);
    expect(["offer", "fast-path"]).toContain((await resumed).via);
    expect((await finished).status).toBe("COMPLETED");
    expect((await getRunRow(te, id)).worker_id).toBe(free.worker.id);
    gates.get(holder)!();
    await Promise.all([full.stop(), free.stop()]);
  });

  it("announces the runs of a completion that wakes more than 16 to all workers instead of offering them", async () => {
    const w = await startTestWorker(te, [offered], { concurrency: 20, timerLoop: false });
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const ids: string[] = [];
    const allSuspended = new Promise<void>((resolve) => {
      let n = 0;
      const off = w.worker.events.on("runSuspended", () => ++n === 17 && (off(), resolve()));
    });
    for (let i = 0; i < 17; i++) ids.push((await triggerRun(te.engine, te.env, "offered", { tokenId })).id);
    await allSuspended;
    const vias: string[] = [];
    const allFinished = new Promise<void>((resolve) => {
      let n = 0;
      w.worker.events.on("runResumed", (e) => ids.includes(e.runId) && vias.push(e.via));
      w.worker.events.on("runFinished", (e) => ids.includes(e.runId) && ++n === 17 && resolve());
    });
    await complete(tokenId);
    await allFinished;
    expect(vias).toEqual(Array(17).fill("fast-path"));
    await w.stop();
  });

  it("re-enters a worker whose registry row went missing at its next heartbeat", async () => {
    const w = await startTestWorker(te, [offered], { timerLoop: false });
    await te.db.pool.query(`DELETE FROM workers`);
    await w.worker.checkExecutions();
    expect(await registered()).toEqual([w.worker.id]);
    const { rows } = await te.db.pool.query<{ alive_until: Date }>(`SELECT alive_until FROM workers`);
    expect(rows[0]!.alive_until.getTime()).toBe(clock.now().getTime() + 15_000);
    await w.stop();
    expect(await registered()).toEqual([]);
  });
});
