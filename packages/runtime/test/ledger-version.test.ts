// runs.ledger_version (migration 0027): what tells a worker whether its in-memory copy of a run's
// ledger is still the ledger. It goes up when an execution suspends the run and when a completion
// resolves any of the run's entries, whatever the run's status; claims read it in the snapshot
// they read the ledger in.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_FAST_RESUME_SQL, completeWaitpoint, createToken, registerWait, triggerRun, type EngineDeps, type Environment } from "@svc/runtime/engine";
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

/** A run that worker `worker_a` is executing (claim token `claim`), as the wait statement expects it. */
async function executingRun(): Promise<string> {
  const { id } = await triggerRun(engine, env, "versioned", {});
  await db.pool.query(`UPDATE runs SET status = 'EXECUTING', claim_token = 'claim', attempt_number = 1, worker_id = 'worker_a' WHERE id = $1`, [id]);
  return id;
}

const versionOf = async (runId: string) =>
  (await db.pool.query<{ ledger_version: number; suspended_worker_id: string | null }>(`SELECT ledger_version, suspended_worker_id FROM runs WHERE id = $1`, [runId])).rows[0]!;

const wait = (runId: string, waitpointId: string, stepKey: string, claimToken = "claim") =>
  registerWait(db.pool, { runId, environmentId: env.id, claimToken, epoch: 0, stepKey, kind: "token", target: waitpointId, waitpointId, now: new Date() });

describe("runs.ledger_version", () => {
  it("goes up when the run suspends (naming the worker that held it) and when its wait resolves; a wait that is already resolved changes nothing", async () => {
    const runId = await executingRun();
    expect(await versionOf(runId)).toEqual({ ledger_version: 0, suspended_worker_id: null });
    const done = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint;
    await completeWaitpoint(engine, db.pool, done.id, { ok: true, output: "1", outputType: "application/json" });
    // Resolved at once: the execution's own write, which its copy has.
    expect(await wait(runId, done.id, "token#0")).toMatchObject({ kind: "resolved" });
    expect((await versionOf(runId)).ledger_version).toBe(0);

    const pending = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint;
    expect(await wait(runId, pending.id, "token#1")).toEqual({ kind: "suspended", ledgerVersion: 1 });
    expect(await versionOf(runId)).toEqual({ ledger_version: 1, suspended_worker_id: "worker_a" });

    await completeWaitpoint(engine, db.pool, pending.id, { ok: true, output: "2", outputType: "application/json" });
    expect(await versionOf(runId)).toEqual({ ledger_version: 2, suspended_worker_id: "worker_a" });
  });

  it("goes up when a completion resolves an entry of a run that is not waiting", async () => {
    const runId = await executingRun();
    const pending = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint;
    await wait(runId, pending.id, "token#0");
    // Executing again (as a claim that raced the completion would leave it), the entry still open.
    await db.pool.query(`UPDATE runs SET status = 'EXECUTING', claim_token = 'claim-2' WHERE id = $1`, [runId]);
    const result = await completeWaitpoint(engine, db.pool, pending.id, { ok: true, output: "3", outputType: "application/json" });
    expect(result).toMatchObject({ changed: true, resumedRunIds: [] });
    expect((await versionOf(runId)).ledger_version).toBe(2);
  });

  it("is read by a claim in the snapshot it reads the ledger in, taken once the claim holds the run: a completion that committed while the claim waited is in both", async () => {
    const runId = await executingRun();
    const first = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint;
    const second = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint;
    await wait(runId, first.id, "token#0");
    // A keyed entry an earlier attempt left open on another token.
    await db.pool.query(
      `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, created_at) VALUES ($1, -1, 'key:k', 'token', $2, $2, false, now())`,
      [runId, second.id],
    );
    // No live worker: the resume is marked due (version 2), for the fast path to claim.
    await completeWaitpoint(engine, db.pool, first.id, { ok: true, output: "5", outputType: "application/json" });
    expect((await versionOf(runId)).ledger_version).toBe(2);

    // A completion of the other token holds the run's row (version 3) while a claim starts.
    const completer = await db.pool.connect();
    try {
      await completer.query("BEGIN");
      await completeWaitpoint(engine, completer, second.id, { ok: true, output: "6", outputType: "application/json" });
      const claim = db.pool.query<{ ledger: { step_key: string; resolved: boolean }[]; ledger_version: number }>(CLAIM_FAST_RESUME_SQL, [
        [runId], ["claim-3"], "worker_b", "test", new Date(), 15_000, ["versioned"],
      ]);
      for (;;) {
        // The claim waits for the completion's row lock (observed in pg_stat_activity, no sleep).
        const { rows } = await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        if (rows.length > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      await completer.query("COMMIT");
      const { rows } = await claim;
      expect(rows).toHaveLength(1);
      // The ledger it read has the second resolution, and the version it says counts it.
      expect(rows[0]!.ledger.map((e) => [e.step_key, e.resolved]).sort()).toEqual([["key:k", true], ["token#0", true]]);
      expect(rows[0]!.ledger_version).toBe(3);
      expect((await versionOf(runId)).ledger_version).toBe(3);
    } finally {
      completer.release();
    }
  });
});
