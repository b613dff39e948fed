import { statusGuard, transition } from "../statuses.ts";

/**
 * A worker gives back offers it will not run: each offered resume (EXECUTING, claimed for it by
 * svc_complete_waitpoint) waits again, same attempt, its resume due at once…
 */
export const OFFER_DECLINE = transition(["EXECUTING"], "WAITING");
/** …and each offered start (offer-start.ts) is QUEUED again as if never claimed, claimable at once. */
export const OFFER_DECLINE_START = transition(["EXECUTING"], "QUEUED");

/**
 * declineOffers' update ($1 run ids, $2 their claim tokens, the fence; $3 now); returns each run
 * given back, its queue and whether it was a start. Constant text.
 */
export const DECLINE_OFFERS_SQL = `UPDATE runs r SET
         status = CASE WHEN r.offered_start THEN '${OFFER_DECLINE_START.to}' ELSE '${OFFER_DECLINE.to}' END,
         attempt_number = CASE WHEN r.offered_start THEN r.attempt_number - 1 ELSE r.attempt_number END,
         started_at = CASE WHEN r.offered_start THEN NULL ELSE r.started_at END,
         resume_due_at = CASE WHEN r.offered_start THEN NULL ELSE $3::timestamptz END,
         claim_token = NULL, lease_expires_at = NULL, offered_at = NULL, offered_start = false, updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS o(run_id, claim_token)
       WHERE r.id = o.run_id AND r.claim_token = o.claim_token AND r.offered_at IS NOT NULL
         AND ${statusGuard("r.status", OFFER_DECLINE)} AND ${statusGuard("r.status", OFFER_DECLINE_START)}
       RETURNING r.id, r.queue_name, r.status = '${OFFER_DECLINE_START.to}' AS start`;
