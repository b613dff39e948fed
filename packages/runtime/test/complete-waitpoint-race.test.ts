// A completion that races a run suspending on the same token (resume-spike pitfall 5): the waiter
// holds the waitpoint FOR SHARE while it records its wait; the completion's guarded update waits
// for it, and its ledger update (a later statement of svc_complete_waitpoint, with a fresh
// snapshot) must see the entry the waiter committed meanwhile, or the wake-up would be lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  completeWaitpoint,
  createToken,
  ensureDefaultProject,
  getEnvironment,
  registerWait,
  SecretBox,
  systemClock,
  triggerRun,
  withTransaction,
  type EngineDeps,
  type Environment,
} from "@svc/runtime/engine";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";

let db: TestDatabase;
let engine: EngineDeps;
let env: Environment;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = { db: db.pool, clock: systemClock, dispatcher: { dispatch: async () => {} }, secrets: new SecretBox("test-encryption-key-0123456789"), apiUrl: "http://svc.test" };
  const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, engine.clock.now()));
  env = (await getEnvironment(db.pool, project.environments.dev.id))!;
});
afterAll(async () => db?.drop());

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
      expect(registration).toEqual({ kind: "suspended" });

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
