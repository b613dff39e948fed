import { KEYED_EPOCH } from "../../ledger/entries.ts";
import { CHANNELS } from "../channels.ts";
import { CLAIMED_COLUMNS } from "../runs/claimed-columns.ts";

/**
 * How a completion offers the runs it wakes to workers, defined here once: svc_complete_waitpoint
 * claims the runs it offers with these (RESUME_OFFERS_PARAMETER) and SEND_OFFERS announces them.
 */
export const RESUME_OFFERS = {
  /** A worker hears its offers on this prefix + its id. */
  channelPrefix: CHANNELS.offersPrefix,
  /**
   * A completion that wakes more runs than this announces them to every worker instead (one
   * token many runs wait on: each worker claims as many as it has slots for in one statement).
   */
  maxRuns: 16,
  /** NOTIFY payloads must stay under 8,000 bytes: a larger offer carries only the claim token. */
  maxPayloadBytes: 7900,
  /** The ledger epoch of keyed waits, replayed by every attempt (an offer carries them too). */
  keyedEpoch: KEYED_EPOCH,
} as const;

/**
 * What svc_complete_waitpoint reads of RESUME_OFFERS, as its jsonb parameter (one constant string:
 * the prepared statement's value never changes).
 */
export const RESUME_OFFERS_PARAMETER = JSON.stringify({
  maxRuns: RESUME_OFFERS.maxRuns,
  maxPayloadBytes: RESUME_OFFERS.maxPayloadBytes,
  keyedEpoch: RESUME_OFFERS.keyedEpoch,
});

/** An offered run `o` (a `runs` row) as an offer carries it: what a claim returns (CLAIMED_COLUMNS). */
const OFFERED_RUN = `json_build_object(${CLAIMED_COLUMNS.map((c) => `'${c}', o.${c}`).join(", ")})`;

/**
 * Announces the runs a completion offered: a LATERAL subquery after svc_complete_waitpoint's
 * result `c` in the completion statement, one row whose `sent` is the number of offers sent. A
 * NOTIFY on each run's worker's own channel with what a claim would have returned, the run and its
 * ledger (`{ version, entries }`, or `{ version, resolved }` for the worker that suspended the run
 * and keeps the rest: see svc_complete_waitpoint), or only its claim token when that would not fit
 * in a NOTIFY; they are delivered when the completion commits. Built here from CLAIMED_COLUMNS, the statement text is constant: the function
 * would have to pick the columns out of each row at run time (~0.06 ms a completion).
 */
export const SEND_OFFERS = `(SELECT count(pg_notify('${RESUME_OFFERS.channelPrefix}' || o.worker_id,
     CASE WHEN octet_length(o.offer) <= ${RESUME_OFFERS.maxPayloadBytes} THEN o.offer
          ELSE json_build_object('claimToken', o.claim_token, 'runId', o.id)::text END)) AS sent
   FROM (SELECT o.id, o.worker_id, o.claim_token,
           CASE WHEN coalesce(octet_length(o.payload), 0) <= ${RESUME_OFFERS.maxPayloadBytes}
                THEN json_build_object('run', ${OFFERED_RUN}, 'ledger', c.offered_ledgers[o.ordinality])::text END AS offer
         FROM unnest(c.offered_runs) WITH ORDINALITY o) o)`;
