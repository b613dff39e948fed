import { retryWhileUnavailable, retryWrite } from "@svc/runtime/db";
import { FINISH_EXECUTIONS_SQL, FINISH_TARGETS, flushWal, notifyWaitersOfRun, prepared, withTransaction, type EngineDeps, type Packet, type Queryable, type RunRow, type RunStatus } from "@svc/runtime/engine";
import type { ClaimedRun } from "./claim.ts";
import type { SerializedError } from "./serialize-error.ts";

/** How an execution ended, decided by the executor. */
export type Ending =
  | { kind: "completed"; output: Packet }
  | { kind: "failed"; error: SerializedError }
  | { kind: "retry"; error: SerializedError; at: Date }
  | { kind: "timed_out"; error: SerializedError }
  | { kind: "crashed"; error: SerializedError };

/** The run status each ending writes: one map, whose transitions the table allows (checked when it loads). */
const RUN_STATUS: Record<Ending["kind"], RunStatus> = FINISH_TARGETS;
const ATTEMPT_STATUS: Record<Ending["kind"], string> = {
  completed: "COMPLETED",
  failed: "FAILED",
  retry: "FAILED",
  timed_out: "TIMED_OUT",
  crashed: "CRASHED",
};

/** One execution to finish: the run as claimed, its claim token (the fence) and how it ended. */
export interface Finish {
  run: ClaimedRun;
  claimToken: string;
  ending: Ending;
  /** When this execution began (the attempt row's started_at). */
  startedAt: Date;
}

/**
 * Whether finishing this run must also wake someone waiting on it: only runs triggered by
 * triggerAndWait / batchTriggerAndWait have a waiter (a plain trigger from a run, or a batch
 * triggered over HTTP, records its parent or batch but nobody waits).
 */
export function hasWaiters(f: Finish): boolean {
  return f.ending.kind !== "retry" && (f.run.trigger_function === "triggerAndWait" || f.run.trigger_function === "batchTriggerAndWait");
}

/**
 * Records how executions ended, fenced by their claim tokens (a canceled or taken-over execution
 * writes nothing): the guarded run updates and attempt rows of a whole batch in one statement.
 * Returns, per input, whether it was written. Unless `withWaiters` (the caller wakes waiters in the
 * same transaction), a run that became awaited after its claim is not written: see attachWaiter.
 */
export async function finishExecutions(db: Queryable, items: Finish[], now: Date, options: { withWaiters?: boolean } = {}): Promise<boolean[]> {
  // One JSON parameter: V8 writes it natively, where text arrays are escaped element by element.
  const input = items.map(({ run, claimToken, ending, startedAt }) => {
    const packet = ending.kind === "completed" ? ending.output : null;
    return {
      run_id: run.id,
      claim_token: claimToken,
      status: RUN_STATUS[ending.kind],
      output: packet?.data ?? null,
      output_type: packet?.type ?? null,
      error: ending.kind === "completed" ? null : ending.error,
      retry: ending.kind === "retry",
      retry_at: ending.kind === "retry" ? ending.at : null,
      attempt_status: ATTEMPT_STATUS[ending.kind],
      started_at: startedAt,
    };
  });
  const withWaiters = options.withWaiters === true;
  const { rows } = await db.query<{ id: string }>(prepared(
    "svc_finish_executions",
    FINISH_EXECUTIONS_SQL,
    [JSON.stringify(input), now, withWaiters],
  ));
  const written = new Set(rows.map((r) => r.id));
  return items.map((item) => written.has(item.run.id));
}

/**
 * Finishes one execution that someone waits on, in a transaction that also wakes the waiters when
 * the run has ended (a retry wakes nobody: the run goes on). Early wake-up, as for a token
 * completed over the API: the transaction commits without waiting for its WAL flush, so the
 * waiting parent resumes while the flush runs, and this returns once the ending is durable.
 */
export async function finishWithWaiters(deps: EngineDeps, item: Finish): Promise<boolean> {
  const written = await retryWhileUnavailable(() => withTransaction(deps.db, async (tx) => {
    const [written] = await finishExecutions(tx, [item], deps.clock.now(), { withWaiters: true });
    if (!written || item.ending.kind === "retry") return written ?? false;
    const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [item.run.id]);
    await notifyWaitersOfRun(deps, tx, rows[0]!);
    return true;
  }, { asyncCommit: true }));
  await retryWrite(() => flushWal(deps.db));
  return written;
}
