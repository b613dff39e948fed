import { RESUME_OFFERS } from "../../waitpoints/resume-offers.ts";
import { CLAIMED_COLUMNS } from "../claimed-columns.ts";
import { transition } from "../statuses.ts";

/**
 * A trigger hands the first attempt of a run it creates to a live worker of the run's task with a
 * free slot, in the statement that inserts the run (insert-runs.ts): the row is written already
 * EXECUTING for that worker — offered (`offered_at`, `offered_start`) — and the
 * same statement NOTIFYs the worker's own channel, which hears it when the insert commits, as a
 * completion offers a resume (svc_complete_waitpoint). The run is QUEUED and claimed in one step:
 * this transition, written by an INSERT. An offer is a claim: the run holds the worker's own lease
 * (workers.lease_ms), which the worker renews from the moment the NOTIFY arrives and it runs the
 * code, and which lapses like any execution's if it never does (the lapse pass counts the attempt).
 * A worker with no free slot gives it back at once (OFFER_DECLINE_START): QUEUED again as if never
 * claimed.
 */
export const OFFER_START = transition(["QUEUED"], "EXECUTING");

/** A trigger offers at most this many runs; more (a batch) go to the queue, where workers take as many as they have slots for. */
export const MAX_START_OFFERS = RESUME_OFFERS.maxRuns;

/**
 * The worker a planned run `p` is offered to, as a LEFT JOIN LATERAL body returning `id`,
 * `version` and `lease_ms`, or no row: only when `offer` (an SQL boolean) holds, for a plain run
 * (`p.plain`: its queue has no concurrencyLimit, so only the queue's own claim may count it; a
 * concurrency key alone changes nothing) that could start at once (QUEUED: no delay; no TTL, since
 * a start given back gets no TTL back; ledger epoch 0: a first attempt, whose offer carries no
 * ledger — a replay from failure starts at 1), a live worker of its task with a free slot (svc_offer_worker, which chooses every
 * offer's worker). `env` and `now` are SQL expressions.
 */
export function pickStartWorker(offer: string, env: string, now: string): string {
  return `SELECT w.id, w.version, w.lease_ms FROM svc_offer_worker(${env}, p.task_identifier, ${now}, NULL, true) w
         WHERE ${offer} AND p.plain AND p.status = '${OFFER_START.from[0]}' AND p.expire_at IS NULL AND p.ledger_epoch = 0`;
}

/**
 * The claim an offer NOTIFY carries for an inserted run (its columns unqualified, as in a RETURNING
 * list): CLAIMED_COLUMNS, no ledger (a first attempt has none). Null for a run not offered.
 */
export const START_OFFER_CLAIM = `CASE WHEN worker_id IS NULL THEN NULL
       ELSE json_build_object('run', json_build_object(${CLAIMED_COLUMNS.map((c) => `'${c}', ${c}`).join(", ")}), 'ledger', NULL, 'start', true)::text END`;

/**
 * Sends the offer of an inserted run `i` (`i.offer`: START_OFFER_CLAIM) on its worker's channel;
 * an offer too large for a NOTIFY carries only the claim token (the worker loads the run).
 */
export const SEND_START_OFFER = `pg_notify('${RESUME_OFFERS.channelPrefix}' || i.worker_id,
         CASE WHEN octet_length(i.offer) <= ${RESUME_OFFERS.maxPayloadBytes} THEN i.offer
              ELSE json_build_object('claimToken', i.claim_token, 'runId', i.id)::text END)`;
