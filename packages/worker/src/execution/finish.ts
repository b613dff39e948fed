import { retryWrite } from "./retry-write.ts";
import { canTransition, flushWal, IllegalTransitionError, notifyWaitersOfRun, prepared, withTransaction, type EngineDeps, type Packet, type Queryable, type RunRow, type RunStatus } from "@svc/runtime/engine";
import type { ClaimedRun } from "./claim.ts";
import type { SerializedError } from "./serialize-error.ts";

/** How an execution ended, decided by the executor. */
export type Ending =
  | { kind: "completed"; output: Packet }
  | { kind: "failed"; error: SerializedError }
  | { kind: "retry"; error: SerializedError; at: Date }
  | { kind: "timed_out"; error: SerializedError }
  | { kind: "crashed"; error: SerializedError };

const RUN_STATUS: Record<Ending["kind"], RunStatus> = {
  completed: "COMPLETED",
  failed: "FAILED",
  retry: "QUEUED",
  timed_out: "TIMED_OUT",
  crashed: "CRASHED",
};
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
  for (const { ending } of items) {
    const to = RUN_STATUS[ending.kind];
    if (!canTransition("EXECUTING", to)) throw new IllegalTransitionError("EXECUTING", to);
  }
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
    `WITH input AS (
       SELECT * FROM json_to_recordset($1::json) AS i(run_id text, claim_token text, status text, output text, output_type text,
         error jsonb, retry boolean, retry_at timestamptz, attempt_status text, started_at timestamptz)),
     finished AS (
       UPDATE runs r SET status = i.status, updated_at = $2, claim_token = NULL, lease_expires_at = NULL,
         output = i.output, output_type = i.output_type, error = i.error,
         finished_at = CASE WHEN i.retry THEN NULL ELSE $2::timestamptz END,
         available_at = CASE WHEN i.retry THEN i.retry_at ELSE r.available_at END,
         ledger_epoch = CASE WHEN i.retry THEN r.ledger_epoch + 1 ELSE r.ledger_epoch END,
         job_id = CASE WHEN i.retry THEN NULL ELSE r.job_id END
       FROM input i
       WHERE r.id = i.run_id AND r.status = 'EXECUTING' AND r.claim_token = i.claim_token
         -- A run someone attached to after it was claimed (attachWaiter) must end with its waiters:
         -- the shared statement leaves it out (re-checked on the newest row version if an attach
         -- committed meanwhile) and the caller finishes it with finishWithWaiters.
         AND ($3 OR i.retry OR NOT r.awaited)
       RETURNING r.id, r.attempt_number, r.worker_id, r.worker_version, i.retry, i.retry_at, i.error, i.attempt_status, i.started_at),
     attempt AS (
       -- The attempt's one row, written as it ends (started_at: when its last execution began).
       INSERT INTO run_attempts (run_id, number, status, worker_id, worker_version, error, retry_at, started_at, finished_at)
       SELECT f.id, f.attempt_number, f.attempt_status, f.worker_id, f.worker_version, f.error, f.retry_at, f.started_at, $2
       FROM finished f
       ON CONFLICT (run_id, number) DO UPDATE SET status = EXCLUDED.status, error = EXCLUDED.error,
         retry_at = EXCLUDED.retry_at, finished_at = EXCLUDED.finished_at),
     wake AS (
       -- Retries are due later: timer loops re-plan.
       SELECT pg_notify('svc_timers', '') WHERE EXISTS (SELECT 1 FROM finished WHERE retry))
     SELECT finished.id, (SELECT count(*) FROM wake) AS woken FROM finished`,
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
  const written = await retryWrite(() => withTransaction(deps.db, async (tx) => {
    const [written] = await finishExecutions(tx, [item], deps.clock.now(), { withWaiters: true });
    if (!written || item.ending.kind === "retry") return written ?? false;
    const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [item.run.id]);
    await notifyWaitersOfRun(deps, tx, rows[0]!);
    return true;
  }, { asyncCommit: true }));
  await retryWrite(() => flushWal(deps.db));
  return written;
}
