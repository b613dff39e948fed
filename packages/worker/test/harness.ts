import type { Clock, EngineDeps, RunRow } from "@svc/runtime/engine";
import type { Task } from "@svc/runtime/sdk";
import { startTestEngine as startEngine, TEST_ENCRYPTION_KEY, wakeDispatcher, type TestEngine as BaseTestEngine } from "@svc/runtime/testing";
import { tokenCreator } from "../src/execution/create-token.ts";
import { envVarsAndSchedules } from "../src/env-vars-and-schedules.ts";
import { TaskEnv } from "../src/task-env.ts";
import { createWorker, type Worker, type WorkerOptions } from "../src/worker.ts";
import type { WorkerEventMap } from "../src/events.ts";

export { TEST_ENCRYPTION_KEY };

/** The test engine with the dispatcher that wakes workers, as the API holds it. */
export type TestEngine = BaseTestEngine;

/** A fresh database with the default project, and engine deps as the API would hold them. */
export function startTestEngine(options: { clock?: Clock } = {}): Promise<TestEngine> {
  return startEngine({ dispatcher: wakeDispatcher, clock: options.clock });
}

export interface TestWorker {
  worker: Worker;
  engine: EngineDeps;
  stop(): Promise<void>;
  /** Stops without draining, as if the process died (its runs are left to recovery). */
  kill(): Promise<void>;
}

/**
 * A worker with its own pool, as a separate process would have. Wired like main.ts (env vars into
 * process.env, declarative schedules); `options` override any of it.
 */
export async function startTestWorker(
  te: BaseTestEngine,
  tasks: Task[],
  options: Partial<WorkerOptions> = {},
): Promise<TestWorker> {
  const own = await te.connect({ poolMax: 8, applicationName: "svc-test-worker", dispatcher: wakeDispatcher });
  const { engine } = own;
  const worker = createWorker({
    engine,
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
  // Tests may stop a worker and stop it again in afterAll: its pool closes once.
  let closed: Promise<void> | undefined;
  const shutdown = () => (closed ??= own.close());
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
 * announced to every worker, or a claim from `runs`. For tests of those paths.
 */
export async function hideFromOffers(te: TestEngine, worker: TestWorker): Promise<void> {
  const { rowCount } = await te.db.pool.query(`UPDATE workers SET listener_lock = 0 WHERE id = $1`, [worker.worker.id]);
  if (rowCount !== 1) throw new Error(`worker ${worker.worker.id} is not registered`);
}

type RunEventName = "runStarted" | "runSuspended" | "runResumed" | "runFinished";

/**
 * Triggers a run with `trigger` and waits for its `name` event on any of `workers`, listening from
 * before the trigger: a start offered to a worker runs the moment the trigger commits, and may start
 * (or suspend) before the trigger's own call has returned.
 */
export async function triggerAndAwait<K extends RunEventName>(
  workers: TestWorker[],
  name: K,
  trigger: () => Promise<{ id: string }>,
  timeoutMs = 20_000,
): Promise<{ id: string; event: WorkerEventMap[K] }> {
  const seen: WorkerEventMap[K][] = [];
  let wanted: string | null = null;
  let found: (event: WorkerEventMap[K]) => void = () => {};
  const arrived = new Promise<WorkerEventMap[K]>((resolve) => (found = resolve));
  const offs = workers.map((w) =>
    w.worker.events.on(name, (event) => {
      if (wanted === null) seen.push(event);
      else if (event.runId === wanted) found(event);
    }),
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const { id } = await trigger();
    wanted = id;
    const early = seen.find((e) => e.runId === id);
    if (early) return { id, event: early };
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${name} of ${id}`)), timeoutMs)));
    return { id, event: await Promise.race([arrived, timeout]) };
  } finally {
    clearTimeout(timer);
    for (const off of offs) off();
  }
}
