import type { Tracer } from "@opentelemetry/api";
import type { ChannelArrivals, CreateToken, EngineDeps, Environment, MicroBatcher, RunTally } from "@svc/runtime/engine";
import type { ReplayNotices, Task, TaskLogSink } from "@svc/runtime/sdk";
import type { Timers } from "@svc/runtime/engine";
import type { WorkerEvents } from "../events.ts";
import type { Claim } from "./claim.ts";
import type { Finish } from "./finish.ts";
import type { LedgerCache } from "./ledger-cache.ts";
import type { RunLogWriter } from "./run-log-writer.ts";

/** Who executes: this worker, the environment it serves and the tasks it has. */
export interface WorkerIdentity {
  id: string;
  version: string;
  environment: Environment;
  /** Its tasks, by id. */
  tasks: Map<string, Task>;
  /** Their ids, computed once (the fast path's claim and the worker registry take them). */
  taskIds: string[];
}

/** What task code gets from the worker besides the engine. */
export interface TaskHooks {
  /** `wait.createToken` inside a run. */
  createToken: CreateToken;
  /** What wakes runs waiting in session.in.once (one LISTEN connection per worker, opened on first use). */
  arrivals: ChannelArrivals;
  /** What wakes runs in streams.input().once/on (one LISTEN connection per worker, opened on first use). */
  inputArrivals: ChannelArrivals;
  /** Called before each execution: the environment's variables for process.env. */
  prepareEnvironment?: () => Promise<void>;
  /** Where task code's `logger.*` and `console.*` lines go (the worker's log, and runLogs). */
  taskLogs: TaskLogSink;
  /** What stores those lines with their run (null: `runLogs: false`). */
  runLogs: RunLogWriter | null;
  /** Said once per worker: where svc's replay model gives a Trigger.dev call another meaning. */
  notices: ReplayNotices;
  /** What times maxDuration (tests: a FakeClock). */
  timers: Timers;
}

/** The writes of executions that the calls of one event-loop turn share (one statement for all). */
export interface ExecutionBatchers {
  /** Resume claims of the fast path (by id, on NOTIFY). */
  fastResumeClaims: MicroBatcher<{ runId: string; claimToken: string }, Claim | null>;
  /** Finishes of runs nobody waits on. */
  finishes: MicroBatcher<Finish, boolean>;
}

/** What executing a run needs. */
export interface ExecutorDeps {
  engine: EngineDeps;
  worker: WorkerIdentity;
  events: WorkerEvents;
  /** Told of the runs task code creates (child runs, a session's next run). */
  tally: RunTally;
  hooks: TaskHooks;
  batchers: ExecutionBatchers;
  /** Traces on (OTEL_EXPORTER_OTLP_ENDPOINT): the process's tracer; null: no spans at all. */
  tracer: Tracer | null;
  /** Where a suspended execution leaves its copy of the run's ledger (see LedgerCache). */
  ledgers: LedgerCache;
}
