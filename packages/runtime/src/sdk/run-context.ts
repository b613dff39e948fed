import { AsyncLocalStorage } from "node:async_hooks";
import { RUN_CONTEXT_KEY } from "./run-context-key.ts";
import type { ReplayNotices } from "./replay-notices.ts";
import type { TaskContext } from "./task-context.ts";
import type { TaskLogSink } from "./task-logs.ts";

/** A wait's result as the engine hands it to the SDK (before wrapping with unwrap()). */
export type RawWaitResult = { ok: true; output: unknown } | { ok: false; error: { name?: string; message: string; code?: string } };

export interface WaitOptions {
  /** A wait with a key is skipped when a previous attempt of the run already passed it. */
  idempotencyKey?: string;
  /** How long the key counts; e.g. "1h". @default "1h" */
  idempotencyKeyTTL?: string;
}

export interface CreateTokenOptions extends WaitOptions {
  /** Duration ("10m") or date. @default "10m" */
  timeout?: string | Date;
  tags?: string | string[];
}

export interface CreatedToken {
  id: string;
  url: string;
  isCached: boolean;
  publicAccessToken: string;
}

export interface ChildRunResult {
  ok: boolean;
  id: string;
  taskIdentifier: string;
  output?: unknown;
  error?: { name?: string; message: string; stackTrace?: string };
}

/** A record of a session channel as a run receives it: `data` is the appended value. */
export interface ChannelRecord<T = unknown> {
  seq: number;
  /** The record's part id. */
  id: string;
  data: T;
  /** Control records (`trigger-control`) carry their meaning here. */
  headers?: [string, string][];
}

export interface ChannelWaitOptions extends WaitOptions {
  /** Give up after this duration ("1h") or at this date. @default none (or the session's expiry) */
  timeout?: string | Date;
}

/** A channel wait's result as the engine hands it to the SDK: the record, or why there is none. */
export type RawChannelResult = { ok: true; record: ChannelRecord } | { ok: false; error: { name?: string; message: string; code?: string } };

/** A wait as onWait and onResume hooks receive it (Trigger.dev's TaskWait). */
export type TaskWait = { type: "duration"; date: Date } | { type: "token"; token: string } | { type: "task"; runId: string } | { type: "batch"; batchId: string; runCount: number };

/** What an execution tells of the waits its code makes (the onWait and onResume hooks). */
export interface WaitListener {
  /**
   * A wait the code reached for the first time, once it is recorded. `suspended`: it suspended the
   * run (the execution is fenced and ends once this settles).
   */
  waited(wait: TaskWait, suspended: boolean): Promise<void>;
  /** A wait's result is handed to the code for the first time in this attempt (recorded: once). */
  resumed(wait: TaskWait): Promise<void>;
}

/** A change of a run's metadata (Trigger.dev's RunMetadataChangeOperation). */
export type { MetadataOperation } from "../engine/metadata/operations.ts";

/** The run's metadata as an execution holds it (see RunMetadataBuffer): read in memory, changes stored in the background. */
export interface RunMetadataAccess {
  /** Reads the run's metadata (once per execution, before the task's code runs). */
  load(): Promise<void>;
  current(): Record<string, unknown>;
  /** One change by the code, of the run itself, its parent or its root run. */
  add(target: "self" | "parent" | "root", op: import("../engine/metadata/operations.ts").MetadataOperation): void;
  /** Stores the changes made so far. */
  flush(): Promise<void>;
  /** Stores the changes, then reads the run's metadata again. */
  refresh(): Promise<void>;
}

/** Which run a stream write goes to: the run, its parent, or the root of its tree (the run itself when it has none). */
export type StreamTarget = "self" | "parent" | "root";

export interface InputWaitOptions extends WaitOptions {
  /** When the wait gives up (ok: false): a duration ("1h"), a date; default: never. */
  timeout?: string | Date;
}

/** An input stream read: the value sent, or why there is none (timed out). */
export type RawInputResult = { ok: true; output: unknown } | { ok: false; error: { name?: string; message: string; code?: string } };

/** A run's realtime and input streams as an execution holds them (`streams.*`, see ledger/run-streams.ts). */
export interface RunStreamAccess {
  /** Appends chunks (JSON values) to a realtime stream, each once however often the code is replayed; resolves once stored. */
  append(key: string, target: StreamTarget, values: unknown[]): Promise<void>;
  /** A pipe to stream `key` under way: the run ends only after it has ended and its chunks are stored (a failure is logged). */
  track(key: string, done: Promise<void>): void;
  /** Waits (checkpointed: the slot is freed) for the next chunk of input stream `key` the code has not received. */
  waitForInput(key: string, options?: InputWaitOptions): Promise<RawInputResult>;
  /** The same, keeping the slot, up to `timeoutMs` (recorded). */
  onceInput(key: string, timeoutMs: number): Promise<RawInputResult>;
  /**
   * The first chunk of input stream `key` the code has not received (the one the next wait/once
   * returns), as far as this execution has loaded it: undefined until loaded, or when there is none
   * (not recorded; the first call starts a live tail of the stream).
   */
  peekInput(key: string): unknown | undefined;
  /** Calls `handler` with each chunk of input stream `key`, from the first, while the execution runs (not recorded). */
  onInput(key: string, handler: (data: unknown) => void | Promise<void>, onError: (error: unknown) => void): { off(): void };
}

/**
 * The durable operations of one execution of a run. The worker implements it (against Postgres);
 * the SDK functions task code calls (`wait.*`, `step.run`, `tasks.triggerAndWait`) delegate here.
 * After the execution suspends or ends it is fenced: every call returns a promise that never
 * settles and writes nothing.
 */
export interface RunExecution {
  readonly ctx: TaskContext;
  /** The attempt span's W3C traceparent when traces are on: the HTTP client sends it, so runs task code triggers join the trace. */
  readonly traceparent?: string | undefined;
  readonly signal: AbortSignal;
  isFenced(): boolean;
  waitForToken(tokenId: string, options?: WaitOptions): Promise<RawWaitResult>;
  waitUntil(date: Date | null, spec: string, durationMs: number | null, options?: WaitOptions): Promise<RawWaitResult>;
  runStep<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  createToken(options: CreateTokenOptions): Promise<CreatedToken>;
  triggerAndWait(taskId: string, payload: unknown, options?: Record<string, unknown>): Promise<ChildRunResult>;
  batchTriggerAndWait(taskId: string, items: { payload: unknown; options?: Record<string, unknown> }[]): Promise<ChildRunResult[]>;
  /** Waits (checkpointed) for the next `.in` record of a session after this execution's cursor. */
  waitForChannel(sessionRef: string, options?: ChannelWaitOptions): Promise<RawChannelResult>;
  /** Waits for the next `.in` record after the cursor keeping the worker slot, up to `timeoutMs` (recorded). */
  onceChannel(sessionRef: string, timeoutMs: number): Promise<RawChannelResult>;
  /** The next `.in` record after the cursor if one is there, without waiting or moving the cursor (recorded). */
  peekChannel(sessionRef: string): Promise<ChannelRecord | undefined>;
  /** Appends records to a session's `.out`, each once however often the run is replayed. */
  appendToChannel(sessionRef: string, records: { data: string | null; headers?: [string, string][] }[]): Promise<void>;
  /** Drops the session's `.out` records below `below` (idempotent). */
  trimChannel(sessionRef: string, below: number): Promise<void>;
  /** Hands the session over to a new run of its task (recorded). */
  continueSession(sessionRef: string, reason: string): Promise<{ runId: string; swapped: boolean }>;
  /** Where `logger.*` lines of this run go (the worker's log). */
  readonly logs: TaskLogSink;
  /** Says where svc's replay model gives a Trigger.dev call another meaning (once per worker). */
  readonly notices: ReplayNotices;
  /** The worker's clock (injected: tests drive it). */
  now(): Date;
  /** The values `locals` holds for this execution. */
  readonly locals: Map<symbol, unknown>;
  /** Whether the code is still replaying: its next durable call was recorded by an earlier execution. */
  isReplaying(): boolean;
  /** Where in the ledger the code is: the key its next unkeyed durable call takes (log lines record it). */
  ledgerPosition(): { stepKey: string; epoch: number };
  /**
   * Calls `fn` unless a run of this attempt (`scope: "attempt"`) or of the run (`"run"`) already
   * did and recorded it under `name`; records it once it returned. Lifecycle hooks (onStart, a
   * wait's onResume) use it: named records take no number from the code's durable calls.
   * Resolves to whether `fn` ran.
   */
  once(name: string, scope: "attempt" | "run", fn: () => Promise<void>): Promise<boolean>;
  /** Adds tags to the run (those it has are skipped), fenced by the claim. */
  addTags(tags: string[]): Promise<{ ok: true; tags: string[] } | { ok: false; tags: string[]; wanted: number }>;
  /** Who hears of this execution's waits (the task's onWait/onResume hooks). */
  listenToWaits(listener: WaitListener | null): void;
  /** The run's metadata (`metadata.*`). */
  readonly metadata: RunMetadataAccess;
  /** The run's realtime and input streams (`streams.*`). */
  readonly streams: RunStreamAccess;
}

/**
 * The current run, shared by every copy of this module in the process: the worker sets it with its
 * copy of @svc/runtime, task code reads it with the copy it imports, and those differ when a
 * project's TypeScript is compiled to CommonJS (or npm installs two versions). The one piece of
 * process-wide state here, on purpose; a registered symbol, as OpenTelemetry's context API does.
 */
const storage: AsyncLocalStorage<RunExecution> = ((globalThis as Record<symbol, unknown>)[RUN_CONTEXT_KEY] as AsyncLocalStorage<RunExecution> | undefined) ??
  ((globalThis as Record<symbol, unknown>)[RUN_CONTEXT_KEY] = new AsyncLocalStorage<RunExecution>());

/** Runs `fn` as the given execution (used by the worker). */
export function runInExecution<T>(execution: RunExecution, fn: () => T): T {
  return storage.run(execution, fn);
}

/** The execution of the current async context, or undefined outside a run. */
export function currentExecution(): RunExecution | undefined {
  return storage.getStore();
}

/** The current execution, or a clear error naming the function that needs one. */
export function requireExecution(fnName: string): RunExecution {
  const execution = storage.getStore();
  if (!execution) {
    throw new Error(`${fnName}() can only be called inside a task run (from a task's run function, executed by an svc worker).`);
  }
  return execution;
}
