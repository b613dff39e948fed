import type { Tracer } from "@opentelemetry/api";
import type { CreateToken, DueWork, EngineDeps, Environment, RunRetentionOptions, Timers } from "@svc/runtime/engine";
import type { Task, TaskLogSink } from "@svc/runtime/sdk";
import type { RunLogWriterOptions } from "./execution/run-log-writer.ts";

/** What a worker is made of (createWorker), in a file of its own: the worker's parts read it too. */
export interface WorkerOptions {
  engine: EngineDeps;
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
  /** Where task code's `logger.*` and `console.*` lines (and svc's replay notices) go. @default pino to stdout */
  taskLogs?: TaskLogSink;
  /**
   * Storing those lines with their runs (run_logs: the dashboard's run page, the run's trace), in
   * batches off the hot path, within a cap per run (docs/run-logs.md). false: not stored.
   * @default DEFAULT_RUN_LOG_LIMITS, written every 200 ms and when an execution ends
   */
  runLogs?: RunLogWriterOptions | false;
  /** What times maxDuration: tests give a FakeClock. @default real timers */
  timers?: Timers;
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
  /** How often the worker claims from `runs` when no NOTIFY woke it (what takes runs a lost NOTIFY left). @default 1000 */
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
