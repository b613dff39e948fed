import { statusGuard, transition } from "../statuses.ts";

/** An execution that registers a wait on a pending waitpoint suspends: EXECUTING → WAITING. */
export const SUSPEND = transition(["EXECUTING"], "WAITING");

/**
 * The prepared statement svc_register_wait (ledger/ledger-store.ts, registerWait): records the
 * wait in the ledger, fenced by the claim token, and suspends the run when the waitpoint is still
 * pending, in one round trip. Its text is constant (the guard is interpolated at module load).
 * Suspending raises the run's ledger_version and names the worker that held it
 * (suspended_worker_id, migration 0027), and returns the new version: the suspending execution's
 * copy of the ledger is the ledger at that version if it was one below when the execution loaded it.
 */
export const REGISTER_WAIT_SQL = `WITH wp AS (
         SELECT status, output, output_type, output_is_error FROM waitpoints WHERE id = $6 AND environment_id = $2 FOR SHARE),
       run AS (
         SELECT id FROM runs WHERE id = $1 AND claim_token = $3 AND ${statusGuard("status", SUSPEND)} FOR UPDATE),
       entry AS (
         INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, outcome, expires_at, created_at, resolved_at, used_epoch)
         SELECT $1, $4, $5, $7, $8, $6, wp.status <> 'WAITING',
           CASE WHEN wp.status = 'WAITING' THEN NULL
                WHEN wp.output_is_error OR wp.status = 'TIMED_OUT'
                  THEN jsonb_build_object('ok', false, 'error', coalesce(wp.output::jsonb, '{"message":"Waitpoint failed"}'::jsonb))
                ELSE jsonb_build_object('ok', true, 'output', wp.output, 'outputType', wp.output_type) END,
           $9, $10, CASE WHEN wp.status <> 'WAITING' THEN $10::timestamptz END, $11::int
         FROM wp, run
         ON CONFLICT (run_id, epoch, step_key) DO UPDATE
           SET kind = EXCLUDED.kind, target = EXCLUDED.target, waitpoint_id = EXCLUDED.waitpoint_id, resolved = EXCLUDED.resolved,
               outcome = EXCLUDED.outcome, expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at, resolved_at = EXCLUDED.resolved_at,
               used_epoch = EXCLUDED.used_epoch
         RETURNING 1),
       suspended AS (
         UPDATE runs SET status = '${SUSPEND.to}', claim_token = NULL, lease_expires_at = NULL, worker_id = NULL, offered_at = NULL, offered_start = false, updated_at = $10,
           ledger_version = ledger_version + 1, suspended_worker_id = worker_id
         WHERE id = (SELECT id FROM run) AND (SELECT status FROM wp) = 'WAITING'
         RETURNING ledger_version)
       SELECT EXISTS (SELECT 1 FROM wp) AS found, NOT EXISTS (SELECT 1 FROM run) AS fenced,
         wp.status, wp.output, wp.output_type, wp.output_is_error,
         (SELECT count(*) FROM entry) AS entries, (SELECT ledger_version FROM suspended) AS ledger_version
       FROM (SELECT 1) one LEFT JOIN wp ON true`;
