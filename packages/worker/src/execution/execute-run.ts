import { randomUUID } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import {
  decideAfterFailure,
  decodePacket,
  DurableExecution,
  encodeOutput,
  loadStoredPacket,
  LedgerSession,
  maxAttemptsOf,
  NondeterminismError,
  type EngineDeps,
  type LedgerEntry,
  type Packet,
} from "@svc/runtime/engine";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { traceparentOf } from "@svc/runtime/engine";
import { runInExecution, TaskLifecycle, type AttemptOutcome, type IdempotencyKeyScope, type RetryDecider, type Task, type TaskContext } from "@svc/runtime/sdk";
import type { Claim, ClaimedRun } from "./claim.ts";
import { offerStands } from "./offers.ts";
import { retryWrite } from "@svc/runtime/db";
import { finishWithWaiters, hasWaiters, type Ending, type Finish } from "./finish.ts";
import { internalError, serializeError } from "./serialize-error.ts";
import { endAttemptSpan, startAttemptSpan } from "./attempt-span.ts";
import type { ActiveExecutions } from "./active-executions.ts";
import type { ExecutorDeps } from "./executor-deps.ts";
import type { Via } from "./via.ts";

export type { Via };

export type Dispatch =
  /** A run this worker claimed straight from `runs`, a start or a resume (see ready-runs.ts). */
  | { kind: "claimed"; runId: string; claimed: Claim }
  /** A resume a NOTIFY named: claimed now, by id (the fast path). */
  | { kind: "resume"; runId: string }
  /** A resume a completion offered to this worker, or a start a trigger offered it, already claimed for it (see offers.ts). */
  | { kind: "offer"; runId: string; claimToken: string; claim: Claim | Promise<Claim | null> };

/**
 * Claims and executes one run: start (a fresh attempt, or a takeover after a crash) or resume
 * (replay the ledger and continue). Returns when the run finished, suspended or was lost;
 * `release` is called as soon as the task code is done (the slot is free before the writes that
 * record how it ended).
 */
export async function executeRun(deps: ExecutorDeps, active: ActiveExecutions, dispatch: Dispatch, release: () => void = () => {}): Promise<void> {
  const { engine } = deps;
  const claimToken = dispatch.kind === "offer" ? dispatch.claimToken : dispatch.kind === "claimed" ? dispatch.claimed.run.claim_token! : randomUUID();
  const claim =
    dispatch.kind === "offer"
      ? await dispatch.claim
      : dispatch.kind === "claimed"
      ? dispatch.claimed
      : await deps.batchers.fastResumeClaims.add({ runId: dispatch.runId, claimToken });
  if (!claim) return;
  const { run } = claim;

  const task = deps.worker.tasks.get(run.task_identifier);
  // Every claim and offer names this worker's tasks; a run of another task is a bug. Its lease is
  // not renewed: the lapse pass gives the run to a worker that has its task.
  if (!task) throw new Error(`claimed run ${run.id} of task ${run.task_identifier}, which this worker does not have`);

  const abort = new AbortController();
  const via: Via = dispatch.kind === "offer" ? "offer" : dispatch.kind === "claimed" ? "claimed" : "fast-path";
  // This process may still run an older execution of the run (it stalled past its lease, and the
  // run came back to this worker): each is registered by its own claim token.
  const execution = { runId: run.id, claimToken, abort };
  active.add(execution);
  // Traces on: the attempt's span (a child of the trigger's, linked to the wait it resumes from).
  const span = deps.tracer ? startAttemptSpan(deps.tracer, claim, via) : null;
  try {
    await runTask(deps, { run, task, claim, claimToken, abort, via, release, span });
  } catch (error) {
    if (span?.isRecording()) endAttemptSpan(span, { kind: "errored", error });
    throw error;
  } finally {
    active.remove(execution);
  }
}

/** A claimed run about to execute its task. */
interface ClaimedExecution {
  run: ClaimedRun;
  task: Task;
  claim: Claim;
  claimToken: string;
  abort: AbortController;
  via: Via;
  /** Frees the execution's slot once the task code is done. */
  release: () => void;
  /** The attempt's span (traces on), ended by runTask with the attempt's outcome. */
  span: Span | null;
}

async function runTask(deps: ExecutorDeps, { run, task, claim, claimToken, abort, via, release, span }: ClaimedExecution): Promise<void> {
  const { engine } = deps;
  const resumed = claim.previousStatus === "WAITING";
  let payload: unknown;
  try {
    payload = decodePacket(await loadStoredPacket(engine.db, run.environment_id, { data: run.payload, type: run.payload_type }));
  } catch (error) {
    if (span) endAttemptSpan(span, { kind: "errored", error });
    await finishAndReport(deps, run, claimToken, { kind: "failed", error: internalError("PAYLOAD_UNREADABLE", `The run's payload could not be read: ${(error as Error).message}`) });
    return;
  }
  const ledger = new LedgerSession(run.ledger_epoch, claim.ledger);
  const maxDuration = run.max_duration_s ?? task.maxDuration;
  const execution = new DurableExecution({
    deps: engine,
    run,
    env: deps.worker.environment,
    claimToken,
    ledger,
    ctx: contextOf(deps, run, task, maxDuration),
    signal: abort.signal,
    createToken: deps.hooks.createToken,
    offerStands: via === "offer" ? () => retryWrite(() => offerStands(engine.db, run.id, claimToken)) : null,
    arrivals: deps.hooks.arrivals,
    inputArrivals: deps.hooks.inputArrivals,
    tracing: span && deps.tracer ? tracingOf(deps.tracer, span) : null,
    tally: deps.tally,
    ledgerVersion: claim.ledgerVersion,
    logs: deps.hooks.taskLogs,
    notices: deps.hooks.notices,
  });
  if (resumed) deps.events.emit("runResumed", { runId: run.id, taskId: run.task_identifier, attempt: run.attempt_number, replayedEntries: ledger.size, via, ledgerFrom: claim.ledgerFrom, waitResolvedAt: latestResolution(claim.ledger) });
  else deps.events.emit("runStarted", { runId: run.id, taskId: run.task_identifier, attempt: run.attempt_number, replayedEntries: ledger.size, via });

  // Whatever ends the execution other than the code returning or throwing: one promise for all
  // (fewer promises per run; each costs an async-hooks callback while AsyncLocalStorage is on).
  let interrupt!: (kind: "suspended" | "fenced" | "timed_out" | "canceled") => void;
  const interrupted = new Promise<{ kind: "suspended" | "fenced" | "timed_out" | "canceled" }>((resolve) => (interrupt = (kind) => resolve({ kind })));
  const stopTimer = maxDuration ? deps.hooks.timers.after(maxDuration * 1000, () => interrupt("timed_out")) : undefined;
  const runRef = { id: run.id, attempt: run.attempt_number, taskId: task.id };
  if (maxDuration && resumed) execution.notices.say("max-duration-per-execution", runRef);
  // Registered before the task runs, so it fires before the task's own abort listeners: code the
  // task runs on abort already finds the execution fenced (a step's function does not run).
  abort.signal.addEventListener(
    "abort",
    () => {
      interrupt("canceled");
      execution.fence();
    },
    { once: true },
  );
  void execution.ended.then((end) => interrupt(end.kind));
  // Preparing the environment (env vars) is part of the attempt: if it fails, the attempt fails
  // and is retried by the task's policy, instead of leaving the claimed run EXECUTING.
  const prepare = deps.hooks.prepareEnvironment;
  // When the run is retried after an error: the task's retry settings (or catchError's), this attempt's number.
  const decide: RetryDecider = (error, policy) => {
    const retryable = !(error instanceof NondeterminismError) && (error as { name?: string })?.name !== "AbortTaskRunError";
    const decision = decideAfterFailure(run.attempt_number, policy ?? task.retry, policy ? null : run.max_attempts, engine.clock.now(), Math.random, retryable);
    return decision.kind === "retry" ? { at: decision.at, delayMs: decision.delayMs } : null;
  };
  // The task's code with its lifecycle hooks; the run has ended when it returned and the `.out`
  // records it appended are stored.
  const lifecycle = new TaskLifecycle({
    task,
    execution,
    payload,
    signal: abort.signal,
    resumed,
    decide,
    afterRun: () => execution.settle(),
    isInternal: (error) => error instanceof NondeterminismError,
  });
  const runCode = () => lifecycle.run();
  const userCode = runInExecution(execution, () => (prepare ? Promise.resolve().then(prepare).then(runCode) : Promise.resolve().then(runCode)));
  const settled = await Promise.race([
    userCode.then(
      (attempt) => attempt,
      // Preparing the environment failed: the attempt failed, retried as the task's settings say.
      (error: unknown): AttemptOutcome => ({ kind: "failed", error, retryAt: decide(error)?.at ?? null }),
    ),
    interrupted,
  ]);
  stopTimer?.();
  // Stopped: nothing the code does from now on is written, and its signal tells it to stop.
  if (settled.kind === "timed_out" || settled.kind === "fenced" || settled.kind === "canceled") {
    execution.fence();
    abort.abort(new Error(settled.kind === "timed_out" ? `maxDuration of ${maxDuration}s exceeded` : "run canceled"));
  }
  // The hooks of an execution that ended another way (cleanup, onCancel) run before its slot is freed.
  if (settled.kind !== "returned" && settled.kind !== "failed") await runInExecution(execution, () => endedHooks(lifecycle, settled.kind, () => isCanceled(engine.db, run)));
  release();
  const outcome = settled.kind === "failed" ? { kind: "threw" as const, error: settled.error, retryAt: settled.retryAt } : settled;
  if (span) endAttemptSpan(span, outcome);
  switch (outcome.kind) {
    case "suspended": {
      // Kept for the completion that offers the run back to this worker (see LedgerCache).
      const kept = execution.suspendedLedger();
      if (kept) deps.ledgers.put(run.id, kept);
      deps.events.emit("runSuspended", { runId: run.id, taskId: run.task_identifier });
      return;
    }
    case "fenced":
    case "canceled":
      await closeCanceledAttempt(engine.db, run, engine.clock.now());
      deps.events.emit("runAbandoned", { runId: run.id, reason: outcome.kind });
      return;
    case "timed_out":
      await finishAndReport(deps, run, claimToken, { kind: "timed_out", error: internalError("MAX_DURATION_EXCEEDED", `Run exceeded its maxDuration of ${maxDuration}s`) });
      return;
    case "returned":
      execution.fence();
      // Encoded here, not in the shared finish statement: a value that cannot be stored fails
      // this run alone.
      let output: Packet;
      try {
        output = encodeOutput(outcome.output);
      } catch (error) {
        await finishAndReport(deps, run, claimToken, { kind: "failed", error: internalError("OUTPUT_UNSERIALIZABLE", `The task's return value could not be stored: ${(error as Error)?.message ?? String(error)}`) });
        return;
      }
      await finishAndReport(deps, run, claimToken, { kind: "completed", output });
      return;
    case "threw": {
      execution.fence();
      const error = outcome.error instanceof NondeterminismError ? { ...serializeError(outcome.error), type: "internal" as const, code: "NONDETERMINISM" } : serializeError(outcome.error);
      await finishAndReport(deps, run, claimToken, outcome.retryAt ? { kind: "retry", error, at: outcome.retryAt } : { kind: "failed", error });
      return;
    }
  }
}

async function finishAndReport(deps: ExecutorDeps, run: ClaimedRun, claimToken: string, ending: Ending) {
  const written = await finish(deps, run, claimToken, ending);
  if (!written) {
    // A cancel that won the race with this ending (the code had already returned or thrown, so
    // its abort came too late to end the execution as canceled) still leaves an attempt to close.
    await closeCanceledAttempt(deps.engine.db, run, deps.engine.clock.now());
    return deps.events.emit("runAbandoned", { runId: run.id, reason: "fenced" });
  }
  if (ending.kind === "retry") deps.events.emit("runRetryScheduled", { runId: run.id, taskId: run.task_identifier, attempt: run.attempt_number, at: ending.at, error: ending.error });
  else {
    const status = ending.kind === "completed" ? "COMPLETED" : ending.kind === "timed_out" ? "TIMED_OUT" : ending.kind === "crashed" ? "CRASHED" : "FAILED";
    deps.events.emit("runFinished", { runId: run.id, taskId: run.task_identifier, status, ...(ending.kind !== "completed" ? { error: ending.error } : {}) });
  }
}

function tracingOf(tracer: NonNullable<ExecutorDeps["tracer"]>, span: Span) {
  return { tracer, context: trace.setSpan(ROOT_CONTEXT, span), traceparent: traceparentOf(span.spanContext()) };
}

/** When the latest of these entries was resolved (a resumed run: the completion it resumes from); null if none says. */
function latestResolution(entries: readonly LedgerEntry[]): Date | null {
  let latest = -Infinity;
  for (const entry of entries) {
    if (!entry.resolvedAt) continue;
    const at = typeof entry.resolvedAt === "string" ? Date.parse(entry.resolvedAt) : entry.resolvedAt.getTime();
    if (at > latest) latest = at;
  }
  return latest === -Infinity ? null : new Date(latest);
}

/** The lifecycle hooks of an execution that ended other than by its code returning or throwing. */
async function endedHooks(lifecycle: TaskLifecycle, end: "suspended" | "fenced" | "timed_out" | "canceled", canceled: () => Promise<boolean>): Promise<void> {
  if (end === "suspended") await lifecycle.suspended();
  else if (end === "canceled") await lifecycle.aborted(canceled);
  else await lifecycle.stopped();
}

/** Whether the run was canceled (an aborted execution may also be its worker stopping, or a takeover). */
async function isCanceled(db: EngineDeps["db"], run: ClaimedRun): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM runs WHERE id = $1 AND environment_id = $2 AND status = 'CANCELED'`, [run.id, run.environment_id]);
  return (rowCount ?? 0) > 0;
}

function contextOf(deps: ExecutorDeps, run: ClaimedRun, task: Task, maxDuration: number | null | undefined): TaskContext {
  const env = deps.worker.environment;
  return {
    run: {
      id: run.id,
      tags: run.tags,
      isTest: run.is_test,
      createdAt: run.created_at,
      ...(run.idempotency_key_user ? { idempotencyKey: run.idempotency_key_user } : {}),
      ...(run.idempotency_key_scope ? { idempotencyKeyScope: run.idempotency_key_scope as IdempotencyKeyScope } : {}),
      ...(run.max_attempts ? { maxAttempts: run.max_attempts } : {}),
      version: deps.worker.version,
      ...(maxDuration ? { maxDuration } : {}),
    },
    attempt: { number: run.attempt_number, startedAt: deps.engine.clock.now() },
    task: { id: task.id },
    queue: { name: run.queue_name },
    environment: { id: env.id, slug: env.slug, type: env.type, ...(env.branchName ? { branchName: env.branchName } : {}) },
    project: { id: env.projectId, ref: env.projectRef },
    organization: { id: env.organizationId },
    ...(run.batch_id ? { batch: { id: run.batch_id } } : {}),
  };
}


function finish(deps: ExecutorDeps, run: ClaimedRun, claimToken: string, ending: Ending): Promise<boolean> {
  const item = { run, claimToken, ending, startedAt: run.updated_at };
  if (hasWaiters(item)) return finishWithWaiters(deps.engine, item);
  // Not written by the shared statement: fenced (canceled, taken over) — or attached to by a waiter
  // after it was claimed, which the shared statement leaves to finishWithWaiters.
  return deps.batchers.finishes.add(item).then((written) => written || (ending.kind !== "retry" && finishWithWaiters(deps.engine, item)));
}

/** The cancel service moves only the run; this worker records the attempt it was executing as CANCELED. */
async function closeCanceledAttempt(db: EngineDeps["db"], run: ClaimedRun, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO run_attempts (run_id, number, status, worker_id, worker_version, started_at, finished_at)
     SELECT id, attempt_number, 'CANCELED', worker_id, worker_version, $4, $3 FROM runs WHERE id = $1 AND attempt_number = $2 AND status = 'CANCELED'
     ON CONFLICT (run_id, number) DO UPDATE SET status = 'CANCELED', finished_at = EXCLUDED.finished_at`,
    [run.id, run.attempt_number, now, run.updated_at],
  );
}
