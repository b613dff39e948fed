import { RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";
import { versionSeenTouch } from "../../workers/worker-versions.ts";

/** A resume job claims a WAITING run with no wait left open (same attempt)… */
export const CLAIM_RESUME = transition(["WAITING"], "EXECUTING");
/** …or, redelivered after its holder died, takes over the EXECUTING run it resumed (a crash). */
export const CLAIM_RESUME_TAKEOVER = transition(["EXECUTING"], "EXECUTING");

/** The prepared statement svc_claim_resume (worker, claimResume). Constant text. */
export const CLAIM_RESUME_SQL = `WITH prev AS (SELECT r.id, r.status, r.updated_at FROM runs r WHERE r.id = $1 FOR UPDATE),
     claimed AS (
       UPDATE runs r SET status = '${CLAIM_RESUME.to}', claim_token = $2, worker_id = $3, worker_version = $4, job_id = $5,
         attempt_number = CASE WHEN prev.status = 'EXECUTING' THEN r.attempt_number + 1 ELSE r.attempt_number END,
         lease_expires_at = NULL, resume_due_at = NULL, offered_at = NULL, updated_at = $6
       FROM prev
       -- A WAITING run with a wait still open is waiting for it, not for this job: a stale resume
       -- job (redelivered after the run resumed another way and suspended again) does nothing.
       WHERE r.id = prev.id AND ((${statusGuard("prev.status", CLAIM_RESUME)} AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.run_id = r.id AND NOT l.resolved))
         OR (${statusGuard("prev.status", CLAIM_RESUME_TAKEOVER)} AND r.job_id = $5))
       RETURNING ${RETURN_CLAIMED}, prev.status AS previous_status)${versionSeenTouch("$4", "$6")},
     crashed AS (
       INSERT INTO run_attempts (run_id, number, status, started_at, finished_at, error)
       SELECT c.id, c.attempt_number - 1, 'CRASHED', coalesce(p.updated_at, $6), $6,
         '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
       FROM claimed c JOIN prev p ON p.id = c.id WHERE c.previous_status = 'EXECUTING'
       ON CONFLICT (run_id, number) DO NOTHING)
     ${SELECT_CLAIMED_WITH_LEDGER}`;
