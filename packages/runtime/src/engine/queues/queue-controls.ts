import type { Queryable } from "../../db/queryable.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { moveRunsOfChangedQueues } from "../runs/changed-queue-runs.ts";
import { retrieveQueue, storedQueueName, type QueueRef, type QueueState } from "./queues.ts";

/**
 * What an operator changes on a queue: pause and resume, a concurrencyLimit override and its reset.
 * A paused or overridden queue counts as limited (svc_queue_is_limited): its runs are taken only by
 * the queue's own claim, which reads the pause and the limit (svc_queue_limit) under the queue's
 * lock, so claims by any number of workers never start more than the limit, nor any start while
 * paused. Each change is one guarded UPDATE of the queue's row; when it changed something, the
 * queue's live runs move to the claim it now wants (executing ones too, so that they count against
 * the new limit: moveRunsOfChangedQueues) and the environment's workers hear of it
 * (CHANNELS.queuesChanged), read which of their queues they claim with a limit, and claim.
 *
 * A trigger whose statement began before the change committed may still insert one run as the
 * queue was (offered, or claimable by the plain claim): see moveRunsOfChangedQueues.
 */

type Deps = Pick<EngineDeps, "db" | "dispatcher">;

/** Pauses (`paused`) or resumes the queue. Returns the queue as it is after. */
export async function setQueuePaused(deps: Deps, environmentId: string, ref: QueueRef, paused: boolean, now: Date): Promise<QueueState> {
  return change(deps, environmentId, ref, now, { set: `paused = $4`, unless: `paused <> $4`, values: [paused] });
}

/** Replaces the queue's concurrencyLimit with `limit` (0: no starts) until reset; `by` names who did (null: the API). */
export async function overrideQueueLimit(deps: Deps, environmentId: string, ref: QueueRef, limit: number, now: Date, by: string | null): Promise<QueueState> {
  return change(deps, environmentId, ref, now, {
    set: `concurrency_limit_override = $4, overridden_at = $3, overridden_by = $5`,
    unless: `concurrency_limit_override IS DISTINCT FROM $4::int OR overridden_by IS DISTINCT FROM $5::text`,
    values: [limit, by],
  });
}

/** Drops the queue's override: its tasks' declared concurrencyLimit applies again. */
export async function resetQueueLimit(deps: Deps, environmentId: string, ref: QueueRef, now: Date): Promise<QueueState> {
  return change(deps, environmentId, ref, now, {
    set: `concurrency_limit_override = NULL, overridden_at = NULL, overridden_by = NULL`,
    unless: `concurrency_limit_override IS NOT NULL`,
    values: [],
  });
}

/**
 * One guarded UPDATE of the queue `ref` names: `set`, where `unless` holds (the change is not made
 * yet). `$1` the environment, `$2` the queue's id or name, `$3` now, `$4`… `values`. Zero rows: the
 * queue is already so (nothing moves, nobody is told), or there is no such queue (404).
 */
async function change(deps: Deps, environmentId: string, ref: QueueRef, now: Date, update: { set: string; unless: string; values: unknown[] }): Promise<QueueState> {
  const byId = "id" in ref;
  const { rows } = await deps.db.query<{ name: string }>(
    `UPDATE queues SET ${update.set}, updated_at = $3
     WHERE environment_id = $1 AND ${byId ? "id" : "name"} = $2 AND (${update.unless})
     RETURNING name`,
    [environmentId, byId ? ref.id : storedQueueName(ref), now, ...update.values],
  );
  const changed = rows[0];
  if (changed) {
    await moveRunsOfChangedQueues(deps, environmentId, [changed.name], now, { executing: true });
    await notifyQueuesChanged(deps.db, environmentId);
  }
  return retrieveQueue(deps.db, environmentId, ref);
}

/** Tells the environment's workers that what their queues' claims read has changed. */
export async function notifyQueuesChanged(db: Queryable, environmentId: string): Promise<void> {
  await db.query(`SELECT pg_notify($1, $2)`, [CHANNELS.queuesChanged, environmentId]);
}
