// How the retention sweep runs: in batches, shared between workers, stoppable, and beside
// triggers and resumes without holding them up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "@svc/runtime/db";
import {
  completeToken, createToken, FakeClock, fireAllDue, runRetention, triggerRun, type EngineDeps, type EnvironmentSweep,
} from "@svc/runtime/engine";
import { startTestEngine, waitingRunOn, type TestEngine } from "@svc/runtime/testing";
import { countRuns, DAY, insertFinishedRuns, retentionWork } from "./retention-fixtures.ts";

let te: TestEngine;
const T0 = new Date("2026-03-01T00:00:00Z");
const clock = new FakeClock(T0);
const t = (days: number) => new Date(T0.getTime() + days * DAY);

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

describe("retention sweeps", () => {
  it("delete more runs than one batch holds, in batches, passing over the runs they keep", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 35, t(0), "many");
    // A run in the middle of them that never finished.
    await te.db.pool.query(`UPDATE runs SET status = 'QUEUED', finished_at = NULL WHERE id = 'run_many_17'`);
    clock.set(t(31));
    const counts = await fireAllDue(te.engine, clock.now(), [retentionWork({ batchSize: 10 })]);
    expect(counts["run-retention"]).toBe(34);
    expect(await countRuns(te.db.pool, "many")).toBe(1);
    const { rows } = await te.db.pool.query(`SELECT array_agg(DISTINCT run_id) AS ids FROM run_attempts WHERE run_id LIKE 'run\\_many\\_%'`);
    expect(rows[0].ids).toEqual(["run_many_17"]);
  });

  it("are shared by workers: each environment is swept by one of them, once", async () => {
    const envs = te.project.environments;
    for (const slug of ["dev", "staging", "prod"] as const) await insertFinishedRuns(te.db.pool, envs[slug].id, 300, t(40), `shared_${slug}`);
    const other = await te.connect({ poolMax: 4 });
    try {
      const swept: { by: string; sweep: EnvironmentSweep }[] = [];
      const work = (by: string) => runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 50, onSwept: (sweep) => swept.push({ by, sweep }) });
      clock.set(t(71));
      const [a, b] = await Promise.all([
        fireAllDue(te.engine, clock.now(), [work("a")]),
        fireAllDue(other.engine, clock.now(), [work("b")]),
      ]);
      expect(a["run-retention"]! + b["run-retention"]!).toBe(900);
      const environments = swept.map((s) => s.sweep.environmentId).sort();
      expect(environments).toEqual([envs.dev.id, envs.staging.id, envs.prod.id, envs.preview.id].sort());
      for (const slug of ["dev", "staging", "prod"] as const) expect(await countRuns(te.db.pool, `shared_${slug}`)).toBe(0);
      // Swept: nothing is due again until the interval has passed.
      expect((await fireAllDue(te.engine, clock.now(), [work("a")]))["run-retention"]).toBe(0);
      expect(swept).toHaveLength(4);
    } finally {
      await other.close();
    }
  });

  it("stop between batches when the loop stops, and are due again at once", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 100, t(80), "stopped");
    // Only this environment's sweep is due, so the clock reads below are its own.
    await te.db.pool.query(`UPDATE retention_sweeps SET due_at = 'infinity' WHERE environment_id <> $1`, [te.env.id]);
    const stop = new AbortController();
    // The sweep reads the clock after each batch (to keep its claim): stop it after the second.
    let reads = 0;
    const stopping: EngineDeps = { ...te.engine, clock: { now: () => (++reads === 3 && stop.abort(), clock.now()) } };
    clock.set(t(111));
    const work = retentionWork({ batchSize: 10 });
    await fireAllDue(stopping, clock.now(), [work], { signal: stop.signal });
    const left = await countRuns(te.db.pool, "stopped");
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(100);
    expect((await work.nextDue(te.db.pool))!.getTime()).toBeLessThanOrEqual(clock.now().getTime());
    await fireAllDue(te.engine, clock.now(), [work]);
    expect(await countRuns(te.db.pool, "stopped")).toBe(0);
  });

  it("hold no lock that triggers or resumes wait for, while they go on beside it", async () => {
    const db = te.db.pool;
    await insertFinishedRuns(db, te.env.id, 20_000, t(120), "busy");
    clock.set(t(151));
    // Runs waiting on tokens, to resume while the sweep deletes.
    const tokens: string[] = [];
    const waiting: string[] = [];
    for (let i = 0; i < 100; i++) {
      const { waitpoint } = await createToken(te.engine, te.env.id, { timeout: "1d" });
      tokens.push(waitpoint.id);
      waiting.push(await waitingRunOn(db, te.env.id, waitpoint.id));
    }
    const sweeper = await te.connect({ poolMax: 2, applicationName: "svc-test-sweeper" });
    let sweeping = true;
    let samples = 0;
    const lockWaits: string[] = [];
    let triggered = 0;
    let resumed = 0;
    // Paced as a worker paces it (a rest as long as each batch).
    const sweep = fireAllDue(sweeper.engine, clock.now(), [retentionWork({ batchSize: 500, restRatio: 1 })]).finally(() => (sweeping = false));
    const triggers = (async () => {
      for (let i = 0; sweeping; i++) {
        await triggerRun(te.engine, te.env, "beside", { i }, i % 2 ? { idempotencyKey: `beside-${i}` } : {});
        triggered += 1;
        if (resumed < tokens.length) {
          await withTransaction(db, (tx) => completeToken(te.engine, tx, tokens[resumed]!, { i }));
          resumed += 1;
        }
      }
    })();
    // Lock waits of this database's sessions on a lock another of its sessions holds. Not those on
    // sessions of other databases: a commit that sent a NOTIFY (a resume here) takes the server's
    // one notification-queue lock (Lock/object) until its commit is flushed, and so waits behind
    // the notifying commits of every other test running beside this one.
    const watch = (async () => {
      while (sweeping) {
        const { rows } = await db.query<{ waiter: string; lock: string; holder: string; statement: string }>(
          `SELECT w.application_name AS waiter, w.wait_event AS lock, b.application_name AS holder, left(w.query, 80) AS statement
             FROM pg_stat_activity w
             CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS blocker(pid)
             JOIN pg_stat_activity b ON b.pid = blocker.pid AND b.datname = w.datname
            WHERE w.datname = current_database() AND w.wait_event_type = 'Lock' AND w.wait_event <> 'extend'`,
        );
        samples += 1;
        for (const r of rows) lockWaits.push(`${r.waiter} waited for a ${r.lock} lock behind ${r.holder}: ${r.statement}`);
      }
    })();
    const counts = await sweep;
    await Promise.all([triggers, watch]);
    await sweeper.close();
    expect(counts["run-retention"]).toBe(20_000);
    expect(await countRuns(db, "busy")).toBe(0);
    expect(samples).toBeGreaterThan(0);
    expect(lockWaits).toEqual([]);
    // They went on while it ran, and took effect.
    expect(triggered).toBeGreaterThan(10);
    expect(resumed).toBeGreaterThan(10);
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::text[]) AND resume_due_at IS NOT NULL`, [waiting.slice(0, resumed)]);
    expect(rows[0]!.n).toBe(resumed);
  });
});
