// A completion that races a run suspending on the same token: the waiter
// holds the waitpoint FOR SHARE while it records its wait; the completion's guarded update waits
// for it, and its ledger update (a later statement of svc_complete_waitpoint, with a fresh
// snapshot) must see the entry the waiter committed meanwhile, or the wake-up would be lost.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeWaitpoint, createToken, registerWait, triggerRun, type EngineDeps, type Environment } from "@svc/runtime/engine";
import { startTestEngine, type TestDatabase, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;

beforeAll(async () => {
  te = await startTestEngine();
  ({ db, engine, env } = te);
});
afterAll(async () => te?.close());

/** A run that a worker is executing (claim token `claim`), as the wait statement expects it. */
async function executingRun(): Promise<string> {
  const { id } = await triggerRun(engine, env, "racer", {});
  await db.pool.query(`UPDATE runs SET status = 'EXECUTING', claim_token = 'claim', attempt_number = 1 WHERE id = $1`, [id]);
  return id;
}

describe("svc_complete_waitpoint racing a waiter", () => {
  it("waits for the waiter's transaction and then resolves the entry it committed, marking the run's resume due", async () => {
    const runId = await executingRun();
    const { waitpoint } = await createToken(engine, env.id, { timeout: "1h" });
    const waiter = await db.pool.connect();
    try {
      await waiter.query("BEGIN");
      const registration = await registerWait(waiter, {
        runId, environmentId: env.id, claimToken: "claim", epoch: 0, stepKey: "token#0", kind: "token", target: waitpoint.id, waitpointId: waitpoint.id, now: new Date(),
      });
      expect(registration).toEqual({ kind: "suspended", ledgerVersion: 1 });

      const completion = completeWaitpoint(engine, db.pool, waitpoint.id, { ok: true, output: '"go"', outputType: "application/json" });
      // The completion is blocked on the waiter's row lock (observed in pg_stat_activity, no sleep).
      for (;;) {
        const { rows } = await db.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%svc_complete_waitpoint(%'`,
        );
        if (rows.length > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      await waiter.query("COMMIT");

      const result = await completion;
      expect(result).toMatchObject({ changed: true, resumedRunIds: [runId] });
      const { rows } = await db.pool.query(
        `SELECT r.status, r.resume_due_at IS NOT NULL AS due, l.resolved, l.outcome FROM runs r JOIN run_ledger l ON l.run_id = r.id WHERE r.id = $1`,
        [runId],
      );
      expect(rows).toEqual([{ status: "WAITING", due: true, resolved: true, outcome: { ok: true, output: '"go"', outputType: "application/json" } }]);
    } finally {
      waiter.release();
    }
  });

  it("returns the waitpoint unchanged to a second completion, and null for an unknown id", async () => {
    const { waitpoint } = await createToken(engine, env.id, { timeout: "1h" });
    const first = await completeWaitpoint(engine, db.pool, waitpoint.id, { ok: true, output: "1", outputType: "application/json" });
    expect(first).toMatchObject({ changed: true, resumedRunIds: [], waitpoint: { id: waitpoint.id, status: "COMPLETED", output: "1" } });
    const second = await completeWaitpoint(engine, db.pool, waitpoint.id, { ok: false, error: { message: "late" } });
    expect(second).toEqual({ changed: false, waitpoint: first.waitpoint });
    expect(second.waitpoint?.completed_at).toBeInstanceOf(Date);
    expect(await completeWaitpoint(engine, db.pool, "waitpoint_unknown", { ok: true })).toEqual({ changed: false, waitpoint: null });
    // Another environment's waitpoint is not found either.
    expect(await completeWaitpoint(engine, db.pool, waitpoint.id, { ok: true }, { environmentId: "env_other" })).toEqual({ changed: false, waitpoint: null });
  });
});

/** A pool that records the WAL insert position right after each early completion statement. */
class ObservedPool extends pg.Pool {
  completionLsns: string[] = [];
  override async query(...args: any[]): Promise<any> {
    const result = await (super.query as (...a: any[]) => Promise<any>)(...args);
    if (args[0]?.name === "svc_complete_waitpoint_early") {
      const { rows } = await super.query<{ lsn: string }>(`SELECT pg_current_wal_insert_lsn()::text AS lsn`);
      this.completionLsns.push(rows[0]!.lsn);
    }
    return result;
  }
}

describe("a completion on a pool (its own transaction)", () => {
  it("returns only once its commit is on disk, and leaves synchronous_commit on for the connection's next statements", async () => {
    const pool = new ObservedPool({ connectionString: db.url, max: 1 });
    try {
      const runId = await executingRun();
      const { waitpoint } = await createToken(engine, env.id, { timeout: "1h" });
      await registerWait(db.pool, {
        runId, environmentId: env.id, claimToken: "claim", epoch: 0, stepKey: "token#0", kind: "token", target: waitpoint.id, waitpointId: waitpoint.id, now: new Date(),
      });
      const result = await completeWaitpoint(engine, pool, waitpoint.id, { ok: true, output: '"go"', outputType: "application/json" });
      expect(result).toMatchObject({ changed: true, resumedRunIds: [runId] });
      expect(pool.completionLsns).toHaveLength(1);
      const { rows } = await pool.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS durable, current_setting('synchronous_commit') AS sync`, [pool.completionLsns[0]]);
      expect(rows).toEqual([{ durable: true, sync: "on" }]);
      // The result carries the waitpoint's columns only.
      expect(result.waitpoint).not.toHaveProperty("async_commit");

      // Also when it changes nothing: the completion it found may not be durable yet.
      const again = await completeWaitpoint(engine, pool, waitpoint.id, { ok: true, output: '"late"', outputType: "application/json" });
      expect(again.changed).toBe(false);
      const after = await pool.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS durable`, [pool.completionLsns[1]]);
      expect(after.rows).toEqual([{ durable: true }]);
    } finally {
      await pool.end();
    }
  });
});
