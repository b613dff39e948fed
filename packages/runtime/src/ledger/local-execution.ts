import type { Clock } from "../clock.ts";
import { applyMetadataOperations, type MetadataOperation } from "../engine/metadata/operations.ts";
import { parseSuperjson } from "../engine/runs/superjson-text.ts";
import { never } from "../sdk/never.ts";
import { ReplayNotices } from "../sdk/replay-notices.ts";
import type {
  RunMetadataAccess,
  RunStreamAccess,
  ChannelRecord, ChildRunResult, CreatedToken, CreateTokenOptions, RawChannelResult, RawWaitResult, RunExecution, WaitListener, WaitOptions,
} from "../sdk/run-context.ts";
import type { TaskContext } from "../sdk/task-context.ts";
import type { TaskLogSink } from "../sdk/task-logs.ts";
import type { LedgerKind } from "./entries.ts";
import { parseStored, StepOutcomeSchema } from "./outcomes.ts";
import type { LedgerSession } from "./replay.ts";
import { batchResults, childResult, waitResult } from "./wait-results.ts";

/** What a local replay did, call by call. */
export type LocalReplayEvent =
  /** A durable call answered from the recorded ledger (its function did not run). */
  | { type: "replayed"; stepKey: string; kind: LedgerKind; target: string | null }
  /** The first unrecorded step: its function ran here; `value` is what it returned (nothing was recorded). */
  | { type: "executed"; stepKey: string; name: string; value: unknown }
  /** The first unrecorded step threw. */
  | { type: "threw"; stepKey: string; name: string; error: unknown }
  /** A write the code asked for that a local replay does not make (tags, a session's `.out`). */
  | { type: "not-written"; what: string };

/** Where a local replay stopped before the code ended: a call it cannot answer without the engine. */
export interface LocalReplayStop {
  stepKey: string | null;
  reason: string;
}

/**
 * One execution of a run's task code in the developer's own process against the run's recorded
 * ledger (`svc runs replay --local`): no worker, no claim, nothing written. Recorded steps and
 * completed waits return their recorded results; a recorded entry of another kind or name throws
 * the NondeterminismError a worker's replay throws. The first step with no record runs here (its
 * value is reported, not recorded); the next durable call after it, or any wait with no completed
 * record, stops the execution (`stopped` resolves, the code is left awaiting forever). Lifecycle
 * hooks recorded in the ledger (onStart …) are passed, others run; onWait/onResume hooks are not
 * called.
 */
/**
 * Metadata in a local replay: changes apply to an in-memory copy that starts empty (what the run
 * stored is not read) and are never stored, as nothing in a local replay is.
 */
class LocalMetadata implements RunMetadataAccess {
  #store: Record<string, unknown> = {};
  async load(): Promise<void> {}
  current(): Record<string, unknown> {
    return this.#store;
  }
  add(target: "self" | "parent" | "root", op: MetadataOperation): void {
    if (target === "self") this.#store = applyMetadataOperations(this.#store, [op]).metadata;
  }
  async flush(): Promise<void> {}
  async refresh(): Promise<void> {}
}

export class LocalExecution implements RunExecution {
  readonly ctx: TaskContext;
  readonly metadata: RunMetadataAccess = new LocalMetadata();
  readonly signal: AbortSignal;
  readonly logs: TaskLogSink;
  readonly notices: ReplayNotices;
  readonly locals = new Map<symbol, unknown>();
  /** Resolves when the execution stopped at a call it cannot answer. */
  readonly stopped: Promise<LocalReplayStop>;
  readonly #ledger: LedgerSession;
  readonly #clock: Clock;
  readonly #onEvent: (event: LocalReplayEvent) => void;
  #stop!: (stop: LocalReplayStop) => void;
  #isStopped = false;
  /** The step that ran here, once one did: the execution stops at the next durable call. */
  #executed: string | null = null;

  constructor(args: { ctx: TaskContext; ledger: LedgerSession; clock: Clock; logs: TaskLogSink; signal: AbortSignal; onEvent: (event: LocalReplayEvent) => void }) {
    this.ctx = args.ctx;
    this.signal = args.signal;
    this.logs = args.logs;
    this.notices = new ReplayNotices(args.logs, args.clock);
    this.#ledger = args.ledger;
    this.#clock = args.clock;
    this.#onEvent = args.onEvent;
    this.stopped = new Promise((resolve) => (this.#stop = resolve));
  }

  isFenced(): boolean {
    return this.#isStopped;
  }

  now(): Date {
    return this.#clock.now();
  }

  isReplaying(): boolean {
    return this.#ledger.replaying();
  }

  ledgerPosition(): { stepKey: string; epoch: number } {
    return this.#ledger.nextPosition();
  }

  listenToWaits(_listener: WaitListener | null): void {}

  #halt<T>(stepKey: string | null, reason: string): Promise<T> {
    if (!this.#isStopped) {
      this.#isStopped = true;
      this.#stop({ stepKey, reason });
    }
    return never();
  }

  /** The recorded, resolved entry at the next key (checked against the call), or null. */
  #next(kind: LedgerKind, target: string | null, idempotencyKey?: string) {
    const key = this.#ledger.nextKey(idempotencyKey);
    const entry = this.#ledger.lookup(key, kind, target, this.#clock.now());
    if (entry?.resolved) this.#onEvent({ type: "replayed", stepKey: key.stepKey, kind, target: entry.target });
    return { key, entry: entry?.resolved ? entry : null };
  }

  /** An unrecorded call other than the first step: where the local replay ends. */
  #unrecorded<T>(stepKey: string, what: string): Promise<T> {
    const reason = this.#executed
      ? `${what} comes after step ${this.#executed}, the one that ran here: a local replay runs one unrecorded step`
      : `${what} has no completed record: a local replay does not wait, trigger or create anything`;
    return this.#halt(stepKey, reason);
  }

  async runStep<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    if (this.#isStopped) return never();
    const { key, entry } = this.#next("step", name);
    if (entry) return parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, `the ledger outcome of step ${key.stepKey}`).value) as T;
    if (this.#executed) return this.#unrecorded(key.stepKey, `step "${name}"`);
    this.#executed = `${key.stepKey} ("${name}")`;
    let value: T;
    try {
      value = await fn();
    } catch (error) {
      this.#onEvent({ type: "threw", stepKey: key.stepKey, name, error });
      throw error;
    }
    this.#onEvent({ type: "executed", stepKey: key.stepKey, name, value });
    return value;
  }

  async waitForToken(tokenId: string, options?: WaitOptions): Promise<RawWaitResult> {
    if (this.#isStopped) return never();
    const { key, entry } = this.#next("token", tokenId, options?.idempotencyKey);
    return entry ? waitResult(entry.outcome) : this.#unrecorded(key.stepKey, `the wait for token ${tokenId}`);
  }

  async waitUntil(_date: Date | null, spec: string, _durationMs: number | null, options?: WaitOptions): Promise<RawWaitResult> {
    if (this.#isStopped) return never();
    const { key, entry } = this.#next("datetime", null, options?.idempotencyKey);
    return entry ? { ok: true, output: undefined } : this.#unrecorded(key.stepKey, `the sleep (${spec})`);
  }

  async createToken(_options: CreateTokenOptions): Promise<CreatedToken> {
    if (this.#isStopped) return never();
    const { key, entry } = this.#next("step", "wait.createToken");
    if (entry) return parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, `the ledger outcome of step ${key.stepKey}`).value) as CreatedToken;
    return this.#unrecorded(key.stepKey, "wait.createToken()");
  }

  async triggerAndWait(taskId: string, _payload: unknown, _options?: Record<string, unknown>): Promise<ChildRunResult> {
    if (this.#isStopped) return never();
    const { key, entry } = this.#next("child", taskId);
    return entry ? childResult(entry.outcome, taskId) : this.#unrecorded(key.stepKey, `triggerAndWait of ${taskId}`);
  }

  async batchTriggerAndWait(taskId: string, items: { payload: unknown; options?: Record<string, unknown> }[]): Promise<ChildRunResult[]> {
    if (this.#isStopped) return never();
    if (items.length === 0) return [];
    const { key, entry } = this.#next("batch", taskId);
    return entry ? batchResults(entry.outcome) : this.#unrecorded(key.stepKey, `batchTriggerAndWait of ${taskId}`);
  }

  // Sessions are not replayed locally: their calls take keys of their own (run-session-channels.ts).
  waitForChannel(sessionRef: string): Promise<RawChannelResult> {
    return this.#halt(null, `session ${sessionRef}: sessions are not replayed locally`);
  }
  onceChannel(sessionRef: string): Promise<RawChannelResult> {
    return this.#halt(null, `session ${sessionRef}: sessions are not replayed locally`);
  }
  peekChannel(sessionRef: string): Promise<ChannelRecord | undefined> {
    return this.#halt(null, `session ${sessionRef}: sessions are not replayed locally`);
  }
  continueSession(sessionRef: string): Promise<{ runId: string; swapped: boolean }> {
    return this.#halt(null, `session ${sessionRef}: sessions are not replayed locally`);
  }
  async appendToChannel(sessionRef: string, records: { data: string | null }[]): Promise<void> {
    this.#onEvent({ type: "not-written", what: `${records.length} record(s) to ${sessionRef}.out` });
  }
  /** Streams in a local replay: chunks are not written, input streams are not read (their waits stop the replay). */
  readonly streams: RunStreamAccess = {
    append: async (key, _target, values) => this.#onEvent({ type: "not-written", what: `${values.length} chunk(s) to stream ${key}` }),
    track: () => {},
    waitForInput: (key) => this.#halt(null, `input stream ${key}: input streams are not replayed locally`),
    onceInput: (key) => this.#halt(null, `input stream ${key}: input streams are not replayed locally`),
    onInput: () => ({ off: () => {} }),
    peekInput: () => undefined,
  };

  async trimChannel(sessionRef: string): Promise<void> {
    this.#onEvent({ type: "not-written", what: `a trim of ${sessionRef}.out` });
  }

  async once(name: string, scope: "attempt" | "run", fn: () => Promise<void>): Promise<boolean> {
    if (this.#isStopped) return never();
    if (this.#ledger.lookup(this.#ledger.hookKey(name, scope), "step", `hook:${name}`, this.#clock.now())?.resolved) return false;
    await fn();
    return true;
  }

  async addTags(tags: string[]): Promise<{ ok: true; tags: string[] }> {
    this.#onEvent({ type: "not-written", what: `tags ${tags.join(", ")}` });
    return { ok: true, tags: [...new Set([...this.ctx.run.tags, ...tags])] };
  }
}
