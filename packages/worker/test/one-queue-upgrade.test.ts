// Upgrading a database from before the one queue (migration 0036): pg-boss held a job for runs of
// that time, and svc knew a run's job only by it. The migration moves every kind onto the run row
// and drops pg-boss's schema; a worker of this version then finishes them all:
// - a queued start whose start job waited in pg-boss (a run from before migration 0035: not marked
//   for claims from `runs`);
// - a waiting run whose resume pg-boss held as a resume job (its resume mark already cleared);
// - a run an old worker was executing through a job (no lease): it gets a lease, which nobody
//   renews, so the lapse pass takes it over as after a crash, a new attempt.
// The database is built at migration 0035 with this version's engine, then given pg-boss's schema
// and jobs by pg-boss itself (the bench's reference queue, a devDependency of the workspace).
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgBoss } from "pg-boss";
import { FUNCTIONS_DIR, MIGRATIONS_DIR, migrate } from "@svc/runtime/db";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { connectTestEngine, createTestDatabase, wakeDispatcher, type ConnectedEngine, type TestDatabase } from "@svc/runtime/testing";
import { task, wait } from "@svc/runtime";
import { tokenCreator } from "../src/execution/create-token.ts";
import { createWorker, type Worker } from "../src/worker.ts";
import { eventually } from "./harness.ts";

const clock = new FakeClock(new Date());
let db: TestDatabase;
let connected: ConnectedEngine;
let sqlFiles: string;

const quick = task({ id: "quick", run: async () => "done" });
const approve = task({ id: "approve", run: async (payload: { tokenId: string }) => (await wait.forToken<{ ok: boolean }>(payload.tokenId)).ok });

function worker(): Worker {
  return createWorker({
    engine: connected.engine,
    databaseUrl: db.url,
    environment: connected.env,
    tasks: [quick, approve],
    workerVersion: "test-1",
    concurrency: 4,
    createToken: tokenCreator(connected.engine),
    timerLoop: false,
    pollIntervalMs: 100,
  });
}

const runRow = async (id: string) => (await db.pool.query(`SELECT * FROM runs WHERE id = $1`, [id])).rows[0];

beforeAll(async () => {
  db = await createTestDatabase({ empty: true });
  // Every migration but 0036, as a database of the previous version has them (later ones add
  // columns this version's engine, which builds the old state here, writes), and but 0056, which
  // rebuilds indexes 0036 makes.
  sqlFiles = mkdtempSync(join(tmpdir(), "svc-before-one-queue-"));
  cpSync(MIGRATIONS_DIR, join(sqlFiles, "migrations"), { recursive: true, filter: (path) => !/(0036_one_queue|0056_claims_skip_other_tasks)\.sql$/.test(path) });
  await migrate(db.pool, { migrationsDir: join(sqlFiles, "migrations"), functionsDir: FUNCTIONS_DIR });
  connected = await connectTestEngine(db, { clock, dispatcher: wakeDispatcher });
});
afterAll(async () => {
  await connected?.close();
  await db?.drop();
  if (sqlFiles) rmSync(sqlFiles, { recursive: true, force: true });
});

describe("migration 0036 (one queue) on a database with pg-boss jobs", () => {
  it("moves queued, waiting and in-flight jobs onto their runs, drops pg-boss, and every run completes", async () => {
    const { engine, env } = connected;
    // A run that suspended in its wait, through a worker (its ledger as the task wrote it).
    const before = worker();
    await before.start();
    const tokenId = (await createToken(engine, env.id, { timeout: "1h" })).waitpoint.id;
    const suspended = before.events.next("runSuspended");
    const waiting = await triggerRun(engine, env, "approve", { tokenId });
    await suspended;
    await before.drain();

    // pg-boss as the previous version left it: a start job, a resume job, an active start job.
    const boss = new PgBoss({ connectionString: db.url, schema: "pgboss", supervise: false, schedule: false });
    boss.on("error", () => {});
    await boss.start();
    const startQueue = `svc.${env.id}.task_quick`;
    const resumeQueue = `svc-resume.${env.id}`;
    await boss.createQueue(startQueue);
    await boss.createQueue(resumeQueue);

    const held = await triggerRun(engine, env, "quick", {});
    const jobId = await boss.send(startQueue, { runId: held.id, kind: "start" });
    const [active] = await boss.fetch(startQueue);
    expect(active?.id).toBe(jobId);
    await db.pool.query(
      `UPDATE runs SET status = 'EXECUTING', attempt_number = 1, claim_token = 'old-worker', worker_id = 'worker_old', job_id = $2, started_at = now() WHERE id = $1`,
      [held.id, jobId],
    );

    await withTransaction(db.pool, (tx) => completeToken(engine, tx, tokenId, { ok: true }));
    // The previous version's timer loop had turned the due resume into a resume job.
    await db.pool.query(`UPDATE runs SET resume_due_at = NULL WHERE id = $1`, [waiting.id]);
    await boss.send(resumeQueue, { runId: waiting.id, kind: "resume" });

    const queued = await triggerRun(engine, env, "quick", {});
    await db.pool.query(`UPDATE runs SET claim_from_runs = false WHERE id = $1`, [queued.id]);
    await boss.send(startQueue, { runId: queued.id, kind: "start" });
    await boss.stop({ graceful: false, close: true });

    const { applied } = await migrate(db.pool);
    expect(applied).toEqual(["0036_one_queue", "0056_claims_skip_other_tasks"]);

    expect((await db.pool.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'pgboss'`)).rowCount).toBe(0);
    expect((await db.pool.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'runs' AND column_name = 'job_id'`)).rowCount).toBe(0);
    expect(await runRow(queued.id)).toMatchObject({ status: "QUEUED", claim_from_runs: true });
    expect(await runRow(waiting.id)).toMatchObject({ status: "WAITING", resume_due_at: expect.any(Date) });
    const heldRow = await runRow(held.id);
    expect(heldRow).toMatchObject({ status: "EXECUTING", claim_token: "old-worker" });
    expect(heldRow.lease_expires_at).toBeInstanceOf(Date);

    // This version's worker claims the start and the resume from `runs`.
    const after = worker();
    await after.start();
    try {
      await eventually(async () => (await runRow(queued.id)).status === "COMPLETED" && (await runRow(waiting.id)).status === "COMPLETED");
      expect(JSON.parse((await runRow(waiting.id)).output).json).toBe(true);
      // The old worker's run: its lease (30 s) lapses, and the next attempt runs here.
      expect((await after.timers.tick())["lapsed-leases"]).toBe(0);
      clock.advance(60_000);
      expect((await after.timers.tick())["lapsed-leases"]).toBe(1);
      await eventually(async () => (await runRow(held.id)).status === "COMPLETED");
      expect(await runRow(held.id)).toMatchObject({ attempt_number: 2, worker_id: after.id });
      const attempts = (await db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [held.id])).rows;
      expect(attempts).toEqual([
        { number: 1, status: "CRASHED" },
        { number: 2, status: "COMPLETED" },
      ]);
    } finally {
      await after.drain();
    }
  });
});
