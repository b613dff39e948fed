import type { Queryable } from "../../../db/queryable.ts";
import type { RetryPolicy } from "../retry-policy.ts";
import { statusGuard, transition } from "../statuses.ts";
import type { RunRow } from "../store.ts";

/**
 * An execution whose lease lapsed is queued for a new attempt, or ends CRASHED after its last one;
 * a run offered to a worker (offer-start.ts, svc_complete_waitpoint) holds that worker's lease like
 * any execution, and lapses the same way. Both updates act on rows `findLapsed` locked (FOR
 * UPDATE) in the same transaction, and each is guarded again on what it expects (its status, the
 * lease lapsed): a run that moved on since it was selected (finished, canceled, suspended, its
 * lease renewed) is left alone.
 */
export const LAPSE_REQUEUE = transition(["EXECUTING"], "QUEUED");
export const LAPSE_CRASH = transition(["EXECUTING"], "CRASHED");

/** An execution whose lease ended at `now` (a parameter's text, `$n`). */
const leaseLapsed = (alias: string, now: string) => `${alias}lease_expires_at <= ${now}`;

export type LapsedRun = Pick<RunRow, "id" | "attempt_number" | "max_attempts"> & { retry: RetryPolicy | null };

/** Locks up to `limit` executions whose lease lapsed at `now`. */
export async function findLapsed(tx: Queryable, now: Date, limit: number): Promise<LapsedRun[]> {
  const { rows } = await tx.query<LapsedRun>(
    `SELECT r.id, r.attempt_number, r.max_attempts, wt.retry
         FROM runs r LEFT JOIN worker_tasks wt ON wt.environment_id = r.environment_id AND wt.task_identifier = r.task_identifier
         WHERE ${statusGuard("r.status", LAPSE_REQUEUE)} AND ${leaseLapsed("r.", "$1")}
         ORDER BY r.lease_expires_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

/** Lapsed runs (found by findLapsed) with attempts left go back to the queue; returns those that did. */
export async function requeueLapsed(tx: Queryable, ids: string[], now: Date): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_REQUEUE.to}', claim_token = NULL, lease_expires_at = NULL, worker_id = NULL, offered_at = NULL, offered_start = false, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_REQUEUE)} AND ${leaseLapsed("", "$2")} RETURNING *`,
    [ids, now],
  );
  return rows;
}

/** Lapsed runs (found by findLapsed) on their last attempt end CRASHED with `error`; returns those that did. */
export async function crashLapsed(tx: Queryable, ids: string[], now: Date, error: unknown): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(
    `UPDATE runs SET status = '${LAPSE_CRASH.to}', claim_token = NULL, lease_expires_at = NULL, offered_at = NULL, offered_start = false,
           finished_at = $2, error = $3, updated_at = $2
         WHERE id = ANY($1::text[]) AND ${statusGuard("status", LAPSE_CRASH)} AND ${leaseLapsed("", "$2")} RETURNING *`,
    [ids, now, error],
  );
  return rows;
}
