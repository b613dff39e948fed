import { statusGuard, transition } from "../statuses.ts";

/**
 * A worker gives back offers it will not run: each offered run (EXECUTING, claimed for it by
 * svc_complete_waitpoint) waits again, same attempt, its resume due at once.
 */
export const OFFER_DECLINE = transition(["EXECUTING"], "WAITING");

/** declineOffers' update ($1 run ids, $2 their claim tokens, the fence; $3 now). Constant text. */
export const DECLINE_OFFERS_SQL = `UPDATE runs r SET status = '${OFFER_DECLINE.to}', claim_token = NULL, job_id = NULL, lease_expires_at = NULL, offered_at = NULL,
         resume_due_at = $3, updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS o(run_id, claim_token)
       WHERE r.id = o.run_id AND r.claim_token = o.claim_token AND ${statusGuard("r.status", OFFER_DECLINE)}
       RETURNING r.id`;
