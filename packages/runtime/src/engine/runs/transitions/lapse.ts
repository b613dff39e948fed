import type { Queryable } from "../../../db/queryable.ts";
import type { RetryPolicy } from "../retry-policy.ts";
import { statusGuard, transition } from "../statuses.ts";
import type { RunRow } from "../store.ts";

/**
 * An execution whose lease lapsed: offered but never taken, it waits again; otherwise it
 * is queued for a new attempt, or ends CRASHED after its last one. The three updates act on rows
 * `findLapsed` locked (FOR UPDATE) in the same transaction, and each is guarded again on what it
 * expects (its status, the lease lapsed, offered or not): a run that moved on since it was
 * selected (finished, canceled, suspended, its offer taken, its lease renewed) is left alone.
 */
export const LAPSE_OFFER = transition(["EXECUTING"], "WAITING");
/** An offered start (offer-start.ts) never taken is QUEUED again as if never claimed. */
export const LAPSE_OFFERED_START = transition(["EXECUTING"], "QUEUED");
export const LAPSE_REQUEUE = transition(["EXECUTING"], "QUEUED");
export const LAPSE_CRASH = transition(["EXECUTING"], "CRASHED");

/** An execution whose lease ended at `now` (a parameter's text, `$n`). */
const leaseLapsed = (alias: string, now: string) => `${alias}lease_expires_at <= ${now}`;

export type LapsedRun = Pick<RunRow, "id" | "attempt_number" | "max_attempts" | "offered_start"> & { retry: RetryPolicy | null; offered: boolean };

/** Locks up to `limit` executions whose lease lapsed at `now`. */
export async function findLapsed(tx: Queryable, now: Date, limit: number): Promise<LapsedRun[]> {
  const { rows } = await tx.query<LapsedRun>(
    `SELECT r.id, r.attempt_number, r.max_attempts, r.offered_start, wt.retry, r.offered_at IS NOT NULL AS offered
         FROM runs r LEFT JOIN worker_tasks wt ON wt.environment_id = r.environment_id AND wt.task_identifier = r.task_identifier
         WHERE ${statusGuard("r.status", LAPSE_REQUEUE)} AND ${leaseLapsed("r.", "$1")}
         ORDER BY r.lease_expires_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

/** Offered runs (found by findLapsed) wait again, same attempt, their resume due at once; returns those that did. */
export async function lapseOffered(tx: Queryable, ids: string[], now: Date): Promise<RunRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_OFFER.to}', claim_token = NULL, lease_expires_at = NULL, worker_id = NULL, offered_at = NULL,
           resume_due_at = $2, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_OFFER)} AND ${leaseLapsed("", "$2")} AND offered_at IS NOT NULL AND NOT offered_start
         RETURNING *`,
    [ids, now],
  );
  return rows;
}

/** Offered starts (found by findLapsed) go back to the queue, their attempt not counted; returns those that did. */
export async function requeueOfferedStarts(tx: Queryable, ids: string[], now: Date): Promise<RunRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_OFFERED_START.to}', attempt_number = attempt_number - 1, started_at = NULL, claim_token = NULL,
           lease_expires_at = NULL, worker_id = NULL, offered_at = NULL, offered_start = false, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_OFFERED_START)} AND ${leaseLapsed("", "$2")} AND offered_at IS NOT NULL AND offered_start
         RETURNING *`,
    [ids, now],
  );
  return rows;
}

/** Lapsed runs (found by findLapsed) with attempts left go back to the queue; returns those that did. */
export async function requeueLapsed(tx: Queryable, ids: string[], now: Date): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_REQUEUE.to}', claim_token = NULL, lease_expires_at = NULL, worker_id = NULL, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_REQUEUE)} AND ${leaseLapsed("", "$2")} AND offered_at IS NULL RETURNING *`,
    [ids, now],
  );
  return rows;
}

/** Lapsed runs (found by findLapsed) on their last attempt end CRASHED with `error`; returns those that did. */
export async function crashLapsed(tx: Queryable, ids: string[], now: Date, error: unknown): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_CRASH.to}', claim_token = NULL, lease_expires_at = NULL, finished_at = $2, error = $3, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_CRASH)} AND ${leaseLapsed("", "$2")} AND offered_at IS NULL RETURNING *`,
    [ids, now, error],
  );
  return rows;
}
