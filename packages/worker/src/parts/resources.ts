import { randomUUID } from "node:crypto";
import type { Tracer } from "@opentelemetry/api";
import { createPool, type Pool } from "@svc/runtime/db";
import { CHANNELS, SessionInArrivals, type DueWork, type EngineDeps, type RunTally } from "@svc/runtime/engine";
import type { Task } from "@svc/runtime/sdk";
import { runTallyOf, WorkerEvents } from "../events.ts";
import type { TaskHooks, WorkerIdentity } from "../execution/executor-deps.ts";
import { CLAIM_CONNECTION_SETTINGS } from "../execution/claim.ts";
import { LedgerCache } from "../execution/ledger-cache.ts";
import type { WorkerOptions } from "../worker-options.ts";
import { taskSide } from "../execution/task-side.ts";

/** The worker's settings, defaults applied. */
export interface WorkerConfig {
  databaseUrl: string;
  concurrency: number;
  /** How often the worker claims from `runs` when no NOTIFY woke it. */
  pollIntervalMs: number;
  /** Lease of executions, and of the registry entry. */
  leaseMs: number;
  /** Whether start() starts the timer loop (tests drive time with `worker.timers.tick()`). */
  timerLoop: boolean;
  timerMaxSleepMs: number;
  /** Time-driven work beyond the engine's own (e.g. schedules). */
  dueWork: DueWork[];
}

/** Everything the worker's parts are built from: made once per worker, passed to each part. */
export interface WorkerResources {
  worker: WorkerIdentity;
  /** The tasks as given: registered, and their queues subscribed to, at start. */
  tasks: Task[];
  /** The engine: its pool, clock and dispatcher. */
  engine: EngineDeps;
  /**
   * A second, small pool whose commits do not wait for the WAL flush (~0.2 ms of each resume),
   * for claims and offer acceptances. Safe: a claim lost in a database crash leaves the
   * run WAITING with its resume due, so it is resumed again; and any later durable commit of the
   * execution (a step, the finish) flushes the WAL up to and including the claim first.
   */
  claimPool: Pool;
  /** The ledgers of the runs this worker suspended: resume offers to it carry only what changed. */
  ledgers: LedgerCache;
  config: WorkerConfig;
  hooks: TaskHooks & {
    arrivals: SessionInArrivals;
    inputArrivals: SessionInArrivals;
    /** Runs once after tasks are registered (e.g. declarative schedules). */
    onRegistered?: (tasks: Task[]) => Promise<void>;
  };
  events: WorkerEvents;
  /** What the engine tells of the runs this worker creates and its timers end: emitted as events, which the metrics count. */
  tally: RunTally;
  /** Traces on: the process's tracer (spans of attempts, steps, waits); null: off. */
  tracer: Tracer | null;
  /** Reports an error: the worker's `error` event, then the onError option. */
  report(error: unknown, where: string): void;
}

export function createResources(options: WorkerOptions): WorkerResources {
  const events = new WorkerEvents();
  const report = (error: unknown, where: string) => {
    events.emit("error", { error, where });
    options.onError?.(error, where);
  };
  const tasks = new Map(options.tasks.map((t) => [t.id, t]));
  return {
    worker: { id: `worker_${randomUUID().slice(0, 8)}`, version: options.workerVersion, environment: options.environment, tasks, taskIds: [...tasks.keys()] },
    tasks: options.tasks,
    engine: options.engine,
    claimPool: createPool(options.databaseUrl, { max: 4, applicationName: "svc-worker-claim", settings: CLAIM_CONNECTION_SETTINGS, onError: (error) => report(error, "pool") }),
    ledgers: new LedgerCache(options.ledgerCache),
    config: {
      databaseUrl: options.databaseUrl,
      concurrency: options.concurrency,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      leaseMs: options.leaseMs ?? 15_000,
      timerLoop: options.timerLoop !== false,
      timerMaxSleepMs: options.timerMaxSleepMs ?? 1000,
      dueWork: options.dueWork ?? [],
    },
    hooks: {
      createToken: options.createToken,
      arrivals: new SessionInArrivals({ databaseUrl: options.databaseUrl, onError: (error) => report(error, "session arrivals") }),
      inputArrivals: new SessionInArrivals({ databaseUrl: options.databaseUrl, channel: CHANNELS.runStreamIn, onError: (error) => report(error, "input stream arrivals") }),
      prepareEnvironment: options.prepareEnvironment,
      onRegistered: options.onRegistered,
      ...taskSide(options),
    },
    events,
    tally: runTallyOf(events),
    tracer: options.tracer ?? null,
    report,
  };
}
