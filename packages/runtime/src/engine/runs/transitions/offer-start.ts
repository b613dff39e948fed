import { preparedText, type Queryable } from "../../../db/queryable.ts";
import { RESUME_OFFERS } from "../../waitpoints/resume-offers.ts";
import { CLAIMED_COLUMNS } from "../claimed-columns.ts";
import { statusGuard, transition } from "../statuses.ts";

/**
 * A trigger offers the first attempt of a run it just queued to a live worker of the run's task
 * with a free slot: claimed for that worker (EXECUTING, offered, a short offer lease) and announced
 * on the worker's own channel when the trigger commits, as a completion offers a resume
 * (svc_complete_waitpoint). The run then needs no start job: the worker runs it the moment the
 * NOTIFY arrives. A worker that cannot take it gives it back (OFFER_DECLINE_START), and an offer
 * nobody took lapses (LAPSE_OFFERED_START): the run is QUEUED again as if never claimed.
 */
export const OFFER_START = transition(["QUEUED"], "EXECUTING");

/** An offered run `o` as its offer carries it: what a claim returns (CLAIMED_COLUMNS). */
const OFFERED_RUN = `json_build_object(${CLAIMED_COLUMNS.map((c) => `'${c}', o.${c}`).join(", ")})`;

/**
 * Which runs are offered: plain ones (`claim_from_runs`: no concurrency key, a queue without a
 * concurrencyLimit when inserted; others take a slot of their queue, which only the queue's fetch
 * counts) in their first attempt that could start at once (no delay; no TTL: a start given back gets
 * no TTL back), to a live worker of the run's task whose registry row says it has a free slot
 * (workers.full_since NULL), at random; none: no offer. An offer too large for a NOTIFY carries only
 * the claim token (the worker loads the run).
 *
 * $1 run ids, $2 now, $3 the offer lease in seconds. Returns each offered run's id. Constant text.
 */
export const OFFER_STARTS_SQL = `WITH candidates AS (
       SELECT r.id, r.environment_id, r.task_identifier FROM runs r
       WHERE r.id = ANY ($1::text[]) AND ${statusGuard("r.status", OFFER_START)} AND r.claim_from_runs
         AND r.attempt_number = 0 AND r.ledger_epoch = 0 AND r.expire_at IS NULL AND r.available_at IS NULL
       ORDER BY r.id FOR UPDATE OF r),
     chosen AS (
       SELECT c.id, pick.id AS worker_id, pick.version FROM candidates c CROSS JOIN LATERAL (
         SELECT wk.id, wk.version FROM workers wk
         WHERE wk.environment_id = c.environment_id AND c.task_identifier = ANY (wk.tasks) AND wk.alive_until > $2
           AND wk.full_since IS NULL
           -- Held by the worker's listening connection: it is there to hear the offer.
           AND NOT pg_try_advisory_xact_lock_shared(wk.listener_lock)
         ORDER BY random() LIMIT 1) pick),
     offered AS (
       UPDATE runs r SET status = '${OFFER_START.to}', attempt_number = r.attempt_number + 1, claim_token = gen_random_uuid()::text,
         worker_id = chosen.worker_id, worker_version = chosen.version,
         lease_expires_at = $2::timestamptz + make_interval(secs => $3::double precision), offered_at = $2, offered_start = true,
         started_at = $2, updated_at = $2
       FROM chosen WHERE r.id = chosen.id AND ${statusGuard("r.status", OFFER_START)}
       RETURNING r.*),
     version_seen AS (
       -- As a worker's own claim does (engine/workers/worker-versions.ts).
       UPDATE worker_versions v SET seen_until = $2::timestamptz + interval '1 minute'
       FROM (SELECT DISTINCT environment_id, worker_version FROM offered) s
       WHERE v.environment_id = s.environment_id AND v.version = s.worker_version AND v.seen_until < $2::timestamptz + interval '30 seconds')
     SELECT o.id, pg_notify('${RESUME_OFFERS.channelPrefix}' || o.worker_id,
       CASE WHEN octet_length(x.offer) <= ${RESUME_OFFERS.maxPayloadBytes} THEN x.offer
            ELSE json_build_object('claimToken', o.claim_token, 'runId', o.id)::text END) AS sent
     FROM offered o CROSS JOIN LATERAL (SELECT json_build_object('run', ${OFFERED_RUN}, 'ledger', NULL, 'start', true)::text AS offer) x`;

/** A trigger offers at most this many runs; more (a batch) go to the queue, where workers take as many as they have slots for. */
export const MAX_START_OFFERS = RESUME_OFFERS.maxRuns;

/**
 * Offers the runs a trigger just queued to free workers (OFFER_STARTS_SQL), in the trigger's
 * transaction: the offers are sent if and only if it commits. Returns the ids of the runs offered.
 */
export async function offerStarts(tx: Queryable, runIds: string[], now: Date): Promise<Set<string>> {
  if (runIds.length === 0 || runIds.length > MAX_START_OFFERS) return new Set();
  const { rows } = await tx.query<{ id: string }>(preparedText(OFFER_STARTS_SQL, [runIds, now, RESUME_OFFERS.leaseSeconds]));
  return new Set(rows.map((r) => r.id));
}
