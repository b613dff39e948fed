import { RETURN_CLAIMED, SELECT_CLAIMED_START_WITH_LEDGER } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";
import { versionSeenTouch } from "../../workers/worker-versions.ts";

/** A start job claims a QUEUED run (a new attempt)… */
export const CLAIM_START = transition(["QUEUED"], "EXECUTING");
/** …or, redelivered after its holder died, takes over the EXECUTING run it started (a crash). */
export const CLAIM_START_TAKEOVER = transition(["EXECUTING"], "EXECUTING");

/**
 * The claim of a batch of starts as CTEs after a CTE `input` (run_id, claim_token, job_id): claims
 * the runs (`claimed`), keeps the worker's version seen and writes the CRASHED attempt rows of
 * takeovers; `claims` is what a claim returns (the run, its previous state and its ledger).
 * `worker`, `version` and `now` are the parameters (or expressions) that give them.
 */
export function claimStartsCtes(worker: string, version: string, now: string): string {
  return `prev AS (SELECT r.id, r.status, r.updated_at, r.expire_at, r.started_at FROM runs r WHERE r.id IN (SELECT run_id FROM input) ORDER BY r.id FOR UPDATE),
     claimed AS (
       UPDATE runs r SET status = '${CLAIM_START.to}', attempt_number = r.attempt_number + 1, claim_token = i.claim_token, worker_id = ${worker},
         worker_version = ${version}, job_id = i.job_id, lease_expires_at = NULL, available_at = NULL,
         -- A started run can no longer expire; clearing it also keeps it out of runs_expiring.
         expire_at = NULL,
         started_at = coalesce(r.started_at, ${now}), updated_at = ${now}
       FROM prev JOIN input i ON i.run_id = prev.id
       WHERE r.id = prev.id
         -- A QUEUED run in a retry backoff (available_at ahead) is not started by a stale job (one
         -- pg-boss redelivered): the timer loop enqueues it when the backoff has passed.
         AND ((${statusGuard("prev.status", CLAIM_START)} AND (r.expire_at IS NULL OR r.expire_at > ${now}) AND (r.available_at IS NULL OR r.available_at <= ${now}))
           OR (${statusGuard("prev.status", CLAIM_START_TAKEOVER)} AND r.job_id = i.job_id))
       RETURNING ${RETURN_CLAIMED}, prev.status AS previous_status, prev.expire_at AS previous_expire_at, prev.started_at AS previous_started_at)${versionSeenTouch(version, now)},
     crashed AS (
       -- Attempt rows are written when an attempt ends; one whose worker died never ended: record it now.
       INSERT INTO run_attempts (run_id, number, status, started_at, finished_at, error)
       SELECT c.id, c.attempt_number - 1, 'CRASHED', coalesce(p.updated_at, ${now}), ${now},
         '{"name":"WorkerCrash","message":"The worker executing this attempt stopped responding"}'
       FROM claimed c JOIN prev p ON p.id = c.id WHERE c.previous_status = 'EXECUTING' AND c.attempt_number > 1
       ON CONFLICT (run_id, number) DO NOTHING),
     claims AS (${SELECT_CLAIMED_START_WITH_LEDGER})`;
}

/**
 * The prepared statement svc_claim_starts (worker, claimStarts): claims a batch of starts, writes
 * the CRASHED attempt rows of takeovers and loads the ledgers, in one statement. Constant text.
 */
export const CLAIM_STARTS_SQL = `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS i(run_id text, claim_token text, job_id text)),
     ${claimStartsCtes("$2", "$3", "$4")}
     SELECT * FROM claims`;
