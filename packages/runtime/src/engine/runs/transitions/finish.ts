import { statusGuard, transition, type RunStatus } from "../statuses.ts";

/**
 * An execution ends: its run completes, fails, times out, crashes or (a retry) goes back to the
 * queue. The run status each kind of ending writes (the input row's i.status); all share the one
 * source, EXECUTING.
 */
export const FINISH_TARGETS = {
  completed: "COMPLETED",
  failed: "FAILED",
  retry: "QUEUED",
  timed_out: "TIMED_OUT",
  crashed: "CRASHED",
} as const satisfies Record<string, RunStatus>;

/** The finish transitions, checked against the table when this module loads. */
export const FINISH_ENDINGS = Object.values(FINISH_TARGETS).map((to) => transition(["EXECUTING"], to));

/**
 * The prepared statement svc_finish_executions (worker, finishExecutions): the guarded run
 * updates and attempt rows of a batch of endings, fenced by claim tokens. Constant text.
 *
 * An offered run (offered_at set: a trigger or a completion claimed it for this worker) ends here
 * like any other, fenced by its claim token, and its offer marks are cleared with its claim.
 */
export const FINISH_EXECUTIONS_SQL = `WITH input AS (
       -- One row as planned (svc_input_rows): each run is found by its primary key.
       SELECT i.* FROM svc_input_rows($1::json) e CROSS JOIN LATERAL json_to_record(e) AS i(run_id text, claim_token text, status text,
         output text, output_type text, error jsonb, retry boolean, retry_at timestamptz, attempt_status text, started_at timestamptz)),
     finished AS (
       UPDATE runs r SET status = i.status, updated_at = $2, claim_token = NULL, lease_expires_at = NULL, offered_at = NULL, offered_start = false,
         output = i.output, output_type = i.output_type, error = i.error,
         finished_at = CASE WHEN i.retry THEN NULL ELSE $2::timestamptz END,
         available_at = CASE WHEN i.retry THEN i.retry_at ELSE r.available_at END,
         ledger_epoch = CASE WHEN i.retry THEN r.ledger_epoch + 1 ELSE r.ledger_epoch END
       FROM input i
       WHERE r.id = i.run_id AND ${statusGuard("r.status", FINISH_ENDINGS[0]!)} AND r.claim_token = i.claim_token
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
     SELECT finished.id, (SELECT count(*) FROM wake) AS woken FROM finished`;
