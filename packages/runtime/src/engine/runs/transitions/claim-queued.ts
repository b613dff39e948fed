import { RETURN_CLAIMED, SELECT_CLAIMED_START_WITH_LEDGER } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";
import { versionSeenTouch } from "../../workers/worker-versions.ts";

/**
 * A worker claims plain QUEUED runs of its tasks straight from `runs`, no job in between: the run
 * row is the queue entry. Plain (`claim_from_runs`, set at insert, migration 0035): no concurrency
 * key, a queue without a concurrencyLimit (those still go through a start job, whose queue counts
 * the limit; see start-runs.ts). The claim starts
 * the next attempt with a lease the worker renews while the code runs (as an offer's, once taken);
 * an execution that dies lets it lapse, and the lapse pass queues the run again or ends it CRASHED.
 */
export const CLAIM_QUEUED = transition(["QUEUED"], "EXECUTING");

/**
 * The prepared statement svc_claim_queued: up to `$3` runs of environment `$1` whose task is one
 * of `$2`, oldest first, skipping rows another claim holds (SKIP LOCKED: workers never wait on
 * each other), with their ledgers (a retried attempt replays its keyed waits). A run whose TTL
 * passed is left to the expiry pass. The runs_queued index (migration 0035) holds only such runs,
 * so a claim reads its batch, not the history. $4 worker id, $5 worker version, $6 now, $7 the
 * lease in ms. Constant text.
 */
export const CLAIM_QUEUED_SQL = `WITH picked AS (
       SELECT r.id FROM runs r
       WHERE r.environment_id = $1 AND ${statusGuard("r.status", CLAIM_QUEUED)} AND r.available_at IS NULL AND r.claim_from_runs
         AND r.task_identifier = ANY ($2::text[]) AND (r.expire_at IS NULL OR r.expire_at > $6)
       ORDER BY r.created_at, r.id
       LIMIT $3 FOR UPDATE OF r SKIP LOCKED),
     claimed AS (
       UPDATE runs r SET status = '${CLAIM_QUEUED.to}', attempt_number = r.attempt_number + 1, claim_token = gen_random_uuid()::text,
         worker_id = $4, worker_version = $5, job_id = NULL, available_at = NULL, expire_at = NULL,
         lease_expires_at = $6::timestamptz + make_interval(secs => $7::double precision / 1000),
         started_at = coalesce(r.started_at, $6), updated_at = $6
       FROM picked WHERE r.id = picked.id AND ${statusGuard("r.status", CLAIM_QUEUED)}
       RETURNING ${RETURN_CLAIMED})${versionSeenTouch("$5", "$6")}
     ${SELECT_CLAIMED_START_WITH_LEDGER}`;
