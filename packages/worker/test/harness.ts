import { createPool } from "@svc/runtime/db";
import {
  ensureDefaultProject,
  getEnvironment,
  SecretBox,
  systemClock,
  withTransaction,
  type Clock,
  type EngineDeps,
  type Environment,
  type ProjectCredentials,
  type RunRow,
} from "@svc/runtime/engine";
import type { Task } from "@svc/runtime/sdk";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { tokenCreator } from "../src/execution/create-token.ts";
import { envVarsAndSchedules } from "../src/env-vars-and-schedules.ts";
import { PgBossDispatcher, startBoss, type PgBoss } from "@svc/queue";
import { TaskEnv } from "../src/task-env.ts";
import { createWorker, type Worker, type WorkerOptions } from "../src/worker.ts";

export const TEST_ENCRYPTION_KEY = "test-encryption-key-0123456789";

export interface TestEngine {
  db: TestDatabase;
  engine: EngineDeps;
  boss: PgBoss;
  project: ProjectCredentials;
  env: Environment;
  close(): Promise<void>;
}

/** A fresh database with the default project, and engine deps as the API would hold them. */
export async function startTestEngine(options: { clock?: Clock } = {}): Promise<TestEngine> {
  const db = await createTestDatabase();
  const boss = await startBoss({ connectionString: db.url, supervise: false, max: 4 });
  const engine: EngineDeps = {
    db: db.pool,
    clock: options.clock ?? systemClock,
    dispatcher: new PgBossDispatcher(boss),
    secrets: new SecretBox(TEST_ENCRYPTION_KEY),
    apiUrl: "http://svc.test",
  };
  const project = await withTransaction(db.pool, (tx) => ensureDefaultProject(tx, engine.secrets, engine.clock.now()));
  const env = (await getEnvironment(db.pool, project.environments.dev.id))!;
  return {
    db,
    engine,
    boss,
    project,
    env,
    async close() {
      await boss.stop({ graceful: false, close: true });
      await db.drop();
    },
  };
}

export interface TestWorker {
  worker: Worker;
  engine: EngineDeps;
  stop(): Promise<void>;
  /** Stops without draining, as if the process died (its runs are left to recovery). */
  kill(): Promise<void>;
}

/**
 * A worker with its own pool and pg-boss instance, as a separate process would have. Wired like
 * main.ts (env vars into process.env, declarative schedules); `options` override any of it.
 */
export async function startTestWorker(te: TestEngine, tasks: Task[], options: Partial<WorkerOptions> = {}): Promise<TestWorker> {
  const pool = createPool(te.db.url, { max: 8, applicationName: "svc-test-worker", onError: () => {} });
  const boss = await startBoss({ connectionString: te.db.url, supervise: true, max: 6 });
  const dispatcher = new PgBossDispatcher(boss);
  const engine: EngineDeps = { ...te.engine, db: pool, dispatcher };
  const worker = createWorker({
    engine,
    boss,
    dispatcher,
    databaseUrl: te.db.url,
    environment: te.env,
    tasks,
    workerVersion: "test-1",
    concurrency: 8,
    createToken: tokenCreator(engine),
    pollIntervalMs: 200,
    ...envVarsAndSchedules(engine, te.env, new TaskEnv(process.env)),
    ...options,
  });
  await worker.start();
  const shutdown = async () => {
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    await pool.end().catch(() => {});
  };
  return {
    worker,
    engine,
    async stop() {
      await worker.drain();
      await shutdown();
    },
    async kill() {
      await worker.abandon();
      await shutdown();
    },
  };
}

export async function getRunRow(te: TestEngine, id: string): Promise<RunRow> {
  const { rows } = await te.db.pool.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [id]);
  return rows[0]!;
}

/** How many of this test database's backends wait for a lock another backend holds (for row-lock choreography). */
export async function blockedBackends(te: TestEngine): Promise<number> {
  const { rows } = await te.db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
  );
  return rows[0]!.n;
}

/** Polls a database predicate until it holds (for effects no event announces). */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 20_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Makes completions see `worker` as gone (its registry row names a lock no connection holds), so that
 * resumes reach it the way they reach a worker nobody offers them to: the NOTIFY fast path
 * announced to every worker, or pg-boss. For tests of those paths.
 */
export async function hideFromOffers(te: TestEngine, worker: TestWorker): Promise<void> {
  const { rowCount } = await te.db.pool.query(`UPDATE workers SET listener_lock = 0 WHERE id = $1`, [worker.worker.id]);
  if (rowCount !== 1) throw new Error(`worker ${worker.worker.id} is not registered`);
}

/**
 * Waits until a resumed run is taken, not merely offered: a worker accepts an offer just after its
 * code starts, and an offer whose lease lapses before that goes back to WAITING instead of being
 * treated as a crashed attempt. Tests that let a resumed execution's lease lapse wait for this.
 */
export async function offerTaken(te: TestEngine, runId: string): Promise<void> {
  await eventually(async () => (await getRunRow(te, runId)).offered_at === null);
}
