import { RETURN_CLAIMED, SELECT_CLAIMED_WITH_LEDGER } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";
import { versionSeenTouch } from "../../workers/worker-versions.ts";

/**
 * The resume fast path claims a WAITING run whose resume is due, by id, with a lease: a completion
 * announced it (svc_complete_waitpoint). Only runs of queues without a concurrencyLimit
 * (`claim_from_runs`): the others take a slot of their queue (CLAIM_LIMITED_SQL).
 */
export const FAST_RESUME = transition(["WAITING"], "EXECUTING");

const SET = `status = '${FAST_RESUME.to}', worker_id = $3, worker_version = $4, resume_due_at = NULL, offered_at = NULL,
    lease_expires_at = $5::timestamptz + make_interval(secs => $6::double precision / 1000), updated_at = $5`;

/** The prepared statement svc_claim_fast_resume (worker, claimFastResumes with one run). */
export const CLAIM_FAST_RESUME_SQL = `WITH claimed AS (
             UPDATE runs r SET ${SET}, claim_token = ($2::text[])[1]
             WHERE r.id = ($1::text[])[1] AND ${statusGuard("r.status", FAST_RESUME)} AND r.resume_due_at IS NOT NULL AND r.claim_from_runs AND r.task_identifier = ANY($7::text[])
             RETURNING ${RETURN_CLAIMED})${versionSeenTouch("$4", "$5")}
           ${SELECT_CLAIMED_WITH_LEDGER}`;

/** The prepared statement svc_claim_fast_resumes (worker, claimFastResumes with several runs). */
export const CLAIM_FAST_RESUMES_SQL = `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[]) AS i(run_id, claim_token)),
           free AS (
             SELECT r.id FROM runs r WHERE r.id IN (SELECT run_id FROM input) AND ${statusGuard("r.status", FAST_RESUME)} AND r.resume_due_at IS NOT NULL AND r.claim_from_runs
               AND r.task_identifier = ANY($7::text[])
             ORDER BY r.id FOR UPDATE SKIP LOCKED),
           claimed AS (
             UPDATE runs r SET ${SET}, claim_token = i.claim_token
             FROM free JOIN input i ON i.run_id = free.id
             WHERE r.id = free.id
             RETURNING ${RETURN_CLAIMED})${versionSeenTouch("$4", "$5")}
           ${SELECT_CLAIMED_WITH_LEDGER}`;
