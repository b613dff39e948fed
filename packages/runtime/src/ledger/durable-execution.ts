import { retryWrite } from "../db/retry-write.ts";
import { storedRunMetadata } from "../engine/metadata/run-metadata-store.ts";
import type { Queryable } from "../db/queryable.ts";
import { newId } from "../ids.ts";
import { CHANNELS } from "../engine/channels.ts";
import type { EngineDeps } from "../engine/deps.ts";
import type { ClaimedRun } from "../engine/runs/claimed-columns.ts";
import { parseSuperjson } from "../engine/runs/superjson-text.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { insertWaitpoint } from "../engine/waitpoints/store.ts";
import { never } from "../sdk/never.ts";
import type {
  ChannelRecord, ChannelWaitOptions, ChildRunResult, CreatedToken, CreateTokenOptions, RawChannelResult, RawWaitResult, RunExecution, WaitListener, WaitOptions,
} from "../sdk/run-context.ts";
import { addTagsFromRun } from "../engine/runs/add-tags-from-run.ts";
import { ReplayNotices } from "../sdk/replay-notices.ts";
import { consoleTaskLogs, type TaskLogSink } from "../sdk/task-logs.ts";
import { WaitHooks } from "./wait-hooks.ts";
import { RunStreams } from "./run-streams.ts";
import { RunChannelOutput } from "./channel-output.ts";
import { RunSessionChannels } from "./run-session-channels.ts";
import { batchResults, childResult, waitResult } from "./wait-results.ts";
import type { TaskContext } from "../sdk/task-context.ts";
import { parseStored, StepOutcomeSchema } from "./outcomes.ts";
import { LedgerSession } from "./replay.ts";
import { inSpan, type ExecutionTracing } from "./execution-tracing.ts";
import { makeChildBatchWaitpoint, makeChildRunWaitpoint, type ParentRun } from "./child-runs.ts";
import { NO_RUN_TALLY, type RunTally } from "../engine/runs/run-tally.ts";
import { LedgerCopyTracker, type SuspendedLedger } from "./suspended-ledger.ts";
import { RunWaits } from "./run-waits.ts";
import { RunMetadataBuffer } from "./run-metadata.ts";
import { metadataOpsOf, StepRecords } from "./step-records.ts";
import type { CreateToken, DurableExecutionArgs } from "./durable-execution-args.ts";

export type { SuspendedLedger };
export type { CreateToken, DurableExecutionArgs };


export type ExecutionEnd = { kind: "suspended" } | { kind: "fenced" };

/**
 * One execution of a run: the durable operations task code calls, against the ledger in Postgres.
 * When a wait cannot be satisfied the run is checkpointed (WAITING, claim released) and the
 * execution is fenced: from then on every call returns a promise that never settles, so abandoned
 * code (a Promise.race with a timer, a finally block) cannot write anything for the run.
 */
export class DurableExecution implements RunExecution {
  readonly ctx: TaskContext;
  readonly signal: AbortSignal;
  readonly #deps: EngineDeps;
  readonly #run: ClaimedRun;
  readonly #env: Environment;
  readonly #claimToken: string;
  readonly #ledger: LedgerSession;
  readonly #createToken: CreateToken;
  /** Traces on: the attempt's span, parent of its steps and waits; null (off) skips every span. */
  readonly #tracing: ExecutionTracing | null;
  /** This run as its child runs' lineage records it (with the attempt span's traceparent, traces on). */
  readonly #parent: ParentRun;
  /** The attempt span's traceparent (traces on): the HTTP client sends it from inside the run. */
  readonly traceparent: string | undefined;
  /** Hears of the runs this execution created (child runs, a session's next run) once they are committed. */
  readonly #tally: RunTally;
  #fenced = false;
  /**
   * An offered run (a trigger's or a completion's, already claimed for this worker): reads whether
   * the offer still stands, once, before the first step runs or anything is written; null once read.
   */
  #offerStands: (() => Promise<boolean>) | null;
  #offerCheck: Promise<boolean> | null = null;
  #endListeners: ((end: ExecutionEnd) => void)[] = [];
  /** Whether #ledger is still the stored ledger when the run suspends (suspendedLedger). */
  readonly #ledgerCopy: LedgerCopyTracker;
  readonly #steps: StepRecords;
  /** The `.out` records the code appends, per session. */
  readonly #output: RunChannelOutput;
  /** What the code does with sessions' `.in`, and hand-overs. */
  readonly #sessions: RunSessionChannels;
  /** The waits the code records in the ledger, and the suspensions they lead to. */
  readonly #waits: RunWaits;
  /** Resolves when the execution suspends or loses its claim. */
  readonly ended: Promise<ExecutionEnd>;
  /** Where `logger.*` writes for this run. */
  readonly logs: TaskLogSink;
  readonly notices: ReplayNotices;
  /** What `locals` holds for this execution. */
  readonly locals = new Map<symbol, unknown>();
  /** The task's onWait and onResume hooks around the waits. */
  readonly #waitHooks: WaitHooks;
  /** The run's metadata as the code reads and changes it (`metadata.*`). */
  readonly metadata: RunMetadataBuffer;
  /** The run's realtime and input streams (`streams.*`). */
  readonly streams: RunStreams;

  constructor(args: DurableExecutionArgs) {
    this.#deps = args.deps;
    this.#run = args.run;
    this.#env = args.env;
    this.#claimToken = args.claimToken;
    this.#ledger = args.ledger;
    this.#createToken = args.createToken;
    this.#tracing = args.tracing ?? null;
    this.#tally = args.tally ?? NO_RUN_TALLY;
    this.#ledgerCopy = new LedgerCopyTracker(args.ledgerVersion ?? null);
    this.#parent = { env: args.env, runId: args.run.id, trace: this.#tracing?.traceparent ? { traceparent: this.#tracing.traceparent } : {} };
    this.traceparent = this.#tracing?.traceparent ?? undefined;
    const run = { deps: args.deps, env: args.env, runId: args.run.id, claimToken: args.claimToken, ledger: args.ledger };
    this.#steps = new StepRecords({ ...run, ledgerCopy: this.#ledgerCopy, mayWrite: () => this.#mayWrite(), fence: () => this.fence() });
    this.#output = new RunChannelOutput({ ...run, isFenced: () => this.#fenced, fence: () => this.fence() });
    this.#sessions = new RunSessionChannels({
      ...run,
      arrivals: args.arrivals ?? null,
      output: this.#output,
      isFenced: () => this.#fenced,
      mayWrite: () => this.#mayWrite(),
      fence: () => this.fence(),
      passes: (key, entry) => this.#steps.passes(key, entry),
      register: (wait) => this.#waits.register(wait),
      recordStep: (key, name, make) => this.#steps.makeAndRecord(key, name, make),
      replayedStep: (key, name) => this.#steps.replayed(key, name),
      tally: this.#tally,
    });
    this.#offerStands = args.offerStands ?? null;
    this.ctx = args.ctx;
    this.signal = args.signal;
    this.logs = args.logs ?? consoleTaskLogs;
    this.notices = args.notices ?? new ReplayNotices(this.logs, args.deps.clock);
    this.#waitHooks = new WaitHooks({
      db: args.deps.db,
      environmentId: args.env.id,
      ledger: args.ledger,
      once: (name, scope, fn) => this.once(name, scope, fn),
      report: (error) => this.#reportHookError("onWait", error),
    });
    this.ended = new Promise((resolve) => this.#endListeners.push(resolve));
    this.metadata = new RunMetadataBuffer({
      deps: args.deps,
      environmentId: args.env.id,
      runId: args.run.id,
      claimToken: args.claimToken,
      epoch: args.run.ledger_epoch,
      stored: storedRunMetadata(args.run, args.run.ledger_epoch),
      isFenced: () => this.#fenced,
      mayWrite: () => this.#mayWrite(),
      fence: () => this.fence(),
      report: (message, attributes) => this.#report(message, attributes),
    });
    this.streams = new RunStreams({
      ...run,
      parentRunId: args.run.parent_run_id,
      ended: this.ended,
      arrivals: args.inputArrivals ?? null,
      isFenced: () => this.#fenced,
      fence: () => this.fence(),
      passes: (key, entry) => this.#steps.passes(key, entry),
      register: (wait) => this.#waits.register(wait),
      recordStep: (key, name, make) => this.#steps.makeAndRecord(key, name, make),
      replayedStep: (key, name) => this.#steps.replayed(key, name),
      report: (message, attributes) => this.#report(message, attributes),
    });
    this.#waits = new RunWaits({
      ...run,
      ledgerCopy: this.#ledgerCopy,
      tracing: this.#tracing,
      tally: this.#tally,
      ended: this.ended,
      isFenced: () => this.#fenced,
      mayWrite: () => this.#mayWrite(),
      fence: () => this.fence(),
      suspend: (key) => this.#suspend(key),
      flushChannels: () => this.flushChannels(),
    });
  }

  isFenced(): boolean {
    return this.#fenced;
  }

  /**
   * After the execution suspended the run: its copy of the ledger, when that copy is exactly the
   * ledger at the version the suspension left (nothing else raised the version since the ledger
   * was loaded, and no write of this execution was still under way when it suspended); else null.
   */
  suspendedLedger(): SuspendedLedger | null {
    return this.#ledgerCopy.suspended;
  }

  /**
   * Before a step's function runs or anything is written: whether this execution may. An offered
   * run checks first (once) that its offer still stands: a run canceled between the offer and its
   * arrival runs none of its steps. A run whose code writes nothing before it ends pays nothing.
   */
  async #mayWrite(): Promise<boolean> {
    if (this.#offerStands) {
      this.#offerCheck = this.#offerStands();
      this.#offerStands = null;
    }
    if (this.#offerCheck && !(await this.#offerCheck)) this.fence();
    return !this.#fenced;
  }

  /** Stops the execution from writing anything more (after it suspended, finished or was canceled). */
  fence(end: ExecutionEnd = { kind: "fenced" }): void {
    if (this.#fenced) return;
    this.#fenced = true;
    this.metadata.stop();
    for (const listener of this.#endListeners) listener(end);
  }

  /** A wait suspended the run: fenced at once; the execution ends once the task's onWait ran. */
  #suspend(key: { stepKey: string; epoch: number }): void {
    if (this.#fenced) return;
    this.#fenced = true;
    this.metadata.stop();
    void this.#waitHooks.suspended(key, () => {
      for (const listener of this.#endListeners) listener({ kind: "suspended" });
    });
  }

  #report(message: string, attributes: Record<string, unknown>): void {
    const { ctx } = this;
    this.logs.write({ level: "error", message, attributes, at: this.#deps.clock.now(), run: { id: ctx.run.id, attempt: ctx.attempt.number, taskId: ctx.task.id } });
  }

  #reportHookError(hook: string, error: unknown): void {
    const { ctx } = this;
    const detail = error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : { error };
    this.logs.write({ level: "error", message: `${hook} of task "${ctx.task.id}" threw`, attributes: detail, at: this.#deps.clock.now(), run: { id: ctx.run.id, attempt: ctx.attempt.number, taskId: ctx.task.id } });
  }

  now(): Date {
    return this.#deps.clock.now();
  }

  isReplaying(): boolean {
    return this.#ledger.replaying();
  }

  ledgerPosition(): { stepKey: string; epoch: number } {
    return this.#ledger.nextPosition();
  }

  listenToWaits(listener: WaitListener | null): void {
    this.#waitHooks.listen(listener);
  }

  async once(name: string, scope: "attempt" | "run", fn: () => Promise<void>): Promise<boolean> {
    if (this.#fenced) return never();
    const key = this.#ledger.hookKey(name, scope);
    const target = `hook:${name}`;
    const entry = this.#ledger.lookup(key, "step", target, this.#deps.clock.now());
    if (entry?.resolved) {
      // The hook's metadata operations were numbered when it ran: their numbers are taken again.
      this.metadata.skip(metadataOpsOf(entry));
      return false;
    }
    if (!(await this.#mayWrite())) return never();
    const before = this.metadata.issued;
    await fn();
    const metadataOps = this.metadata.issued - before;
    // Stored before the record: once it exists, a replay skips the hook and never makes them again.
    if (metadataOps > 0) await this.metadata.flush();
    await this.#steps.record(key, target, metadataOps > 0 ? { metadataOps } : null);
    return true;
  }

  async addTags(tags: string[]): Promise<{ ok: true; tags: string[] } | { ok: false; tags: string[]; wanted: number }> {
    if (this.#fenced || !(await this.#mayWrite())) return never();
    const result = await retryWrite(() => addTagsFromRun(this.#deps.db, { runId: this.#run.id, environmentId: this.#env.id, claimToken: this.#claimToken, tags }));
    if (result.kind === "fenced") {
      this.fence();
      return never();
    }
    if (result.kind === "too_many") return { ok: false, tags: result.tags, wanted: result.wanted };
    this.ctx.run.tags = result.tags;
    return { ok: true, tags: result.tags };
  }

  async waitForToken(tokenId: string, options?: WaitOptions): Promise<RawWaitResult> {
    if (this.#fenced) return never();
    const key = this.#ledger.nextKey(options?.idempotencyKey);
    const entry = this.#ledger.lookup(key, "token", tokenId, this.#deps.clock.now());
    if (entry?.resolved) {
      const passes = this.#steps.passes(key, entry);
      return passes === true || (await passes) ? this.#waitHooks.passed(key, waitResult(entry.outcome)) : never();
    }
    this.#waitHooks.reached(key, entry === null);
    const result: RawWaitResult = await this.#waits.register({ key, kind: "token", target: tokenId, existingWaitpointId: tokenId, options, makeWaitpoint: async () => ({ id: tokenId }) });
    return this.#waitHooks.passed(key, result);
  }

  async waitUntil(date: Date | null, spec: string, durationMs: number | null, options?: WaitOptions): Promise<RawWaitResult> {
    if (this.#fenced) return never();
    const now = this.#deps.clock.now();
    const key = this.#ledger.nextKey(options?.idempotencyKey);
    // A sleep is matched by kind only: its recorded wake-up time wins. The replay of
    // `wait.until({ date: new Date(Date.now() + 60_000) })` computes another date, and the sleep
    // it stands for is still the one recorded, not a change of the code.
    const entry = this.#ledger.lookup(key, "datetime", null, now);
    if (entry?.resolved) {
      const passes = this.#steps.passes(key, entry);
      return passes === true || (await passes) ? this.#waitHooks.passed(key, { ok: true, output: undefined }) : never();
    }
    // The wake-up time is recorded once (in the waitpoint), never recomputed from the duration.
    const wakeAt = date ?? new Date(now.getTime() + (durationMs ?? 0));
    const makeWaitpoint = async (tx: Queryable) => {
      const waitpoint = await insertWaitpoint(tx, { id: newId.waitpoint(), environmentId: this.#env.id, type: "DATETIME", timeoutAt: wakeAt, createdAt: now });
      await tx.query(`SELECT pg_notify($1, '')`, [CHANNELS.timers]);
      return { id: waitpoint.id };
    };
    this.#waitHooks.reached(key, entry === null);
    const result: RawWaitResult = await this.#waits.register({ key, kind: "datetime", target: spec, existingWaitpointId: entry?.waitpointId ?? null, options, makeWaitpoint });
    return this.#waitHooks.passed(key, result);
  }

  async runStep<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    if (this.#fenced) return never();
    const key = this.#ledger.nextKey();
    const entry = this.#ledger.lookup(key, "step", name, this.#deps.clock.now());
    if (entry?.resolved) return parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, `the ledger outcome of step ${key.stepKey}`).value) as T;
    // A step's side effects are as much a write as its record: not under a withdrawn offer.
    if (!(await this.#mayWrite())) return never();
    // Traces on: a step that runs (not a replayed one) is a span, its function and its record.
    if (this.#tracing) return inSpan(this.#tracing, `step ${name}`, { "svc.run.id": this.#run.id, "svc.step.name": name, "svc.step.key": key.stepKey }, async () => this.#steps.record(key, name, await fn()));
    const value = await fn();
    return this.#steps.record(key, name, value);
  }

  async createToken(options: CreateTokenOptions): Promise<CreatedToken> {
    if (this.#fenced) return never();
    const key = this.#ledger.nextKey();
    const entry = this.#ledger.lookup(key, "step", "wait.createToken", this.#deps.clock.now());
    if (entry?.resolved) return parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, `the ledger outcome of step ${key.stepKey}`).value) as CreatedToken;
    // Created and recorded in one transaction, once the claim is known to be ours: a crash before
    // the commit leaves no token behind (the replay creates it then), and an execution that lost
    // its run creates none.
    return this.#steps.makeAndRecord(key, "wait.createToken", await this.#createToken(this.#env, options));
  }

  async triggerAndWait(taskId: string, payload: unknown, options: Record<string, unknown> = {}): Promise<ChildRunResult> {
    if (this.#fenced) return never();
    const key = this.#ledger.nextKey();
    const entry = this.#ledger.lookup(key, "child", taskId, this.#deps.clock.now());
    if (entry?.resolved) return this.#waitHooks.passed(key, childResult(entry.outcome, taskId));
    this.#waitHooks.reached(key, entry === null);
    const result = await this.#waits.register({ key, kind: "child", target: taskId, existingWaitpointId: entry?.waitpointId ?? null, makeWaitpoint: (tx) => makeChildRunWaitpoint(this.#deps, tx, this.#parent, taskId, payload, options) });
    return this.#waitHooks.passed(key, childResult(result, taskId));
  }

  async batchTriggerAndWait(taskId: string, items: { payload: unknown; options?: Record<string, unknown> }[]): Promise<ChildRunResult[]> {
    if (this.#fenced) return never();
    if (items.length === 0) return [];
    const key = this.#ledger.nextKey();
    const entry = this.#ledger.lookup(key, "batch", taskId, this.#deps.clock.now());
    if (entry?.resolved) return this.#waitHooks.passed(key, batchResults(entry.outcome));
    this.#waitHooks.reached(key, entry === null);
    const raw = await this.#waits.register({ key, kind: "batch", target: taskId, existingWaitpointId: entry?.waitpointId ?? null, makeWaitpoint: (tx) => makeChildBatchWaitpoint(this.#deps, tx, this.#parent, taskId, items) });
    return this.#waitHooks.passed(key, batchResults(raw));
  }

  waitForChannel(sessionRef: string, options?: ChannelWaitOptions): Promise<RawChannelResult> {
    return this.#fenced ? never() : this.#sessions.waitForChannel(sessionRef, options);
  }

  onceChannel(sessionRef: string, timeoutMs: number): Promise<RawChannelResult> {
    return this.#fenced ? never() : this.#sessions.onceChannel(sessionRef, timeoutMs);
  }

  peekChannel(sessionRef: string): Promise<ChannelRecord | undefined> {
    return this.#fenced ? never() : this.#sessions.peekChannel(sessionRef);
  }

  appendToChannel(sessionRef: string, records: { data: string | null; headers?: [string, string][] }[]): Promise<void> {
    return this.#fenced ? never() : this.#output.append(sessionRef, records);
  }

  trimChannel(sessionRef: string, below: number): Promise<void> {
    return this.#fenced ? never() : this.#sessions.trimChannel(sessionRef, below);
  }

  continueSession(sessionRef: string, reason: string): Promise<{ runId: string; swapped: boolean }> {
    return this.#fenced ? never() : this.#sessions.continueSession(sessionRef, reason);
  }

  /** Resolves once every `.out` record and stream chunk written so far, and every metadata change, is stored (before a wait). */
  async flushChannels(): Promise<void> {
    await Promise.all([this.#output.flush(), this.streams.flush(), this.metadata.flush()]);
  }

  /** Before the run ends: every pipe has ended, and everything is stored (flushChannels). */
  async settle(): Promise<void> {
    await this.streams.settle();
    await this.flushChannels();
  }

}
