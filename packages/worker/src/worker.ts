import { BUILT_IN_DUE_WORK, enterWorkerVersion, lapsedLeases, moveRunsOfLimitedQueues, runRetention, type RunRetentionOptions, type CreateToken, type DueWork, type EngineDeps, type Environment } from "@svc/runtime/engine";
import type { Tracer } from "@opentelemetry/api";
import type { Task } from "@svc/runtime/sdk";
import type { PgBoss, PgBossDispatcher } from "@svc/queue";
import type { WorkerEvents } from "./events.ts";
import { registerTasks } from "./tasks/register-tasks.ts";
import { TimerLoop } from "./timers/timer-loop.ts";
import { createBatchers } from "./parts/batchers.ts";
import { Channels } from "./parts/channels.ts";
import { Executions } from "./parts/executions.ts";
import { FastPath } from "./parts/fast-path.ts";
import { FullFlag } from "./parts/full-flag.ts";
import { Leases } from "./parts/leases.ts";
import { Offers } from "./parts/offers.ts";
import { QueuedRuns } from "./parts/queued-runs.ts";
import { startQueues, subscribeQueues } from "./parts/queues.ts";
import { createResources } from "./parts/resources.ts";
import { Slots } from "./parts/slots.ts";

export interface WorkerOptions {
  engine: EngineDeps;
  boss: PgBoss;
  dispatcher: PgBossDispatcher;
  databaseUrl: string;
  environment: Environment;
  tasks: Task[];
  workerVersion: string;
  concurrency: number;
  createToken: CreateToken;
  /** Extra time-driven work (e.g. schedules). */
  dueWork?: DueWork[];
  /** Runs before each execution (e.g. loads env vars into process.env). */
  prepareEnvironment?: () => Promise<void>;
  /** Runs once after tasks are registered (e.g. declarative schedules). */
  onRegistered?: (tasks: Task[]) => Promise<void>;
  /** false in tests that drive time with `worker.timers.tick()` (and `worker.retention.tick()`). @default true */
  timerLoop?: boolean;
  /**
   * Deletes finished runs (and what hangs off them) once older than their environment's retention
   * period, on a loop of its own (`worker.retention`). Every worker may run it, in any
   * environment: it sweeps all environments of the database, each sweep claimed by one worker.
   * Unset: this worker sweeps nothing (serveWorker sets it from RUN_RETENTION_*). The pace
   * (`batchSize`, `restRatio`) defaults to DEFAULT_RETENTION_PACE; a bad one throws here.
   */
  retention?: Pick<RunRetentionOptions, "defaultDays" | "intervalMs" | "batchSize" | "restRatio" | "paceTimer">;
  pollIntervalMs?: number;
  /** The timer loop's longest sleep when nothing is due sooner (it also wakes on NOTIFY). @default 1000 */
  timerMaxSleepMs?: number;
  leaseMs?: number;
  onError?: (error: unknown, where: string) => void;
  /** Traces on (OTEL_EXPORTER_OTLP_ENDPOINT): spans of attempts, steps and waits. */
  tracer?: Tracer | null;
  /** How many suspended runs' ledgers the worker keeps for resume offers (LedgerCache). @default LEDGER_CACHE_DEFAULTS */
  ledgerCache?: { maxRuns: number; maxBytes: number };
}

export interface Worker {
  readonly id: string;
  readonly events: WorkerEvents;
  readonly timers: TimerLoop;
  /** The retention sweep's loop; null without the `retention` option. */
  readonly retention: TimerLoop | null;
  /** How many runs it may execute at once. */
  readonly concurrency: number;
  /** How many of those slots are taken now (read by the metrics). */
  slotsInUse(): number;
  /** What the lease timer does every `leaseMs / 3` (tests with a FakeClock call it directly). */
  checkExecutions(): Promise<void>;
  start(): Promise<void>;
  /** Stops claiming, lets in-flight runs finish, then stops. */
  drain(): Promise<void>;
  /** Stops at once; in-flight runs are recovered by other workers (tests of crash recovery). */
  abandon(): Promise<void>;
}

/** The retention loop's longest sleep: a new environment's first sweep waits at most this. */
const RETENTION_MAX_SLEEP_MS = 60_000;

/**
 * A worker: claims the runs of one environment and executes them. Composed of named
 * parts (parts/), each built from the one WorkerResources object and given the parts it uses.
 */
export function createWorker(options: WorkerOptions): Worker {
  const resources = createResources(options);
  const { engine, worker, config, report } = resources;
  const batchers = createBatchers(resources);
  const executions = new Executions(resources, batchers);
  const fullFlag = new FullFlag(resources);
  const slots = new Slots(resources, executions, fullFlag);
  const offers = new Offers(resources, slots, batchers.declines, fullFlag);
  const queuedRuns = new QueuedRuns(resources, slots);
  const timers = new TimerLoop(engine, [...BUILT_IN_DUE_WORK, lapsedLeases, ...config.dueWork], {
    maxSleepMs: config.timerMaxSleepMs,
    onError: (error) => report(error, "timers"),
    tally: resources.tally,
  });
  // Its own loop: a sweep may take a while, and must not hold up timeouts and resumes.
  const retention = options.retention
    ? new TimerLoop(engine, [runRetention({ ...options.retention, onSwept: (sweep) => resources.events.emit("environmentSwept", sweep) })], {
        maxSleepMs: RETENTION_MAX_SLEEP_MS,
        onError: (error) => report(error, "retention"),
      })
    : null;
  const channels = new Channels(resources, { slots, timers, executions, offers, fastPath: new FastPath(resources, slots), queuedRuns });
  const leases = new Leases(resources, executions.active, offers, channels);

  async function stopBackground() {
    queuedRuns.stop();
    leases.stop();
    await Promise.all([timers.stop(), retention?.stop()]);
    await channels.stop();
    await resources.hooks.arrivals.stop();
    if (!resources.claimPool.ending) await resources.claimPool.end();
  }

  return {
    id: worker.id,
    events: resources.events,
    timers,
    retention,
    concurrency: config.concurrency,
    slotsInUse: () => slots.inUse,
    checkExecutions: () => leases.check(),
    async start() {
      // Before the tasks (whose registration enters an unknown version as unbounded) and any claim:
      // the run list's version filter reads where this version's claims are.
      await enterWorkerVersion(engine.db, worker.environment.id, worker.version, engine.clock.now());
      await registerTasks(engine.db, worker.environment.id, resources.tasks, worker.version, engine.clock.now());
      // Its queues with a limit now count it for runs queued before (claimed from `runs` until then).
      const limited = [...startQueues(resources.tasks)].filter(([, limit]) => limit !== null).map(([name]) => name);
      await moveRunsOfLimitedQueues(engine, worker.environment.id, limited, engine.clock.now());
      await subscribeQueues(resources, slots);
      await resources.hooks.onRegistered?.(resources.tasks);
      await channels.start();
      await offers.enter(channels);
      slots.start();
      queuedRuns.start();
      if (config.timerLoop) {
        timers.start();
        retention?.start();
      }
      leases.start();
    },
    async drain() {
      slots.close();
      queuedRuns.stop();
      // No more offers; one already on its way is given back (Offers.take sees the slots draining).
      await offers.withdraw().catch((error) => report(error, "registry"));
      await slots.drain();
      await stopBackground();
    },
    async abandon() {
      slots.abandon();
      executions.abortAll(new Error("worker stopped"));
      await stopBackground();
    },
  };
}
