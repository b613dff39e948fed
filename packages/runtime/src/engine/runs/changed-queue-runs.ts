import { withTransaction } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";

/**
 * A worker's queues as they are registered now (its registration committed): the runs of a queue
 * that has a concurrencyLimit now may have been queued while it had none, and the reverse, and
 * each kind is taken by another claim (runs.claim_from_runs: the plain claim, or the queue's own,
 * which counts the limit). Moves the live runs of `queues` that are on the wrong side (queued,
 * delayed, waiting; an executing run finishes where it is) and wakes the workers for those that
 * are ready. Returns how many runs moved. A trigger that read the queue as it was just before the
 * registration committed may still leave one run on the old side: counted outside the limit once.
 *
 * With `executing` (an operator paused a queue or changed its limit: engine/queues/queue-controls.ts)
 * the queue's executing runs move too, so that its claim counts them against the new limit, and
 * rows another claim holds are waited for rather than skipped (in id order, so that two changes
 * never wait on each other crosswise): a run a plain claim is taking at this moment is moved once
 * that claim commits, and counted.
 *
 * A run that holds a named concurrency limit, has gates or its own rate never moves: the limited
 * claim always takes it.
 */
export async function moveRunsOfChangedQueues(deps: Pick<EngineDeps, "db" | "dispatcher">, environmentId: string, queues: string[], now: Date, options: { executing?: boolean } = {}): Promise<number> {
  if (queues.length === 0) return 0;
  const statuses = options.executing ? ["QUEUED", "DELAYED", "WAITING", "PENDING_VERSION", "EXECUTING"] : ["QUEUED", "DELAYED", "WAITING", "PENDING_VERSION"];
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query<{ id: string; queue_name: string; ready: boolean }>(
      `WITH wanted AS (
         SELECT q.name, NOT (SELECT l.limited FROM svc_queue_is_limited($1, q.name) l) AS plain FROM unnest($2::text[]) AS q(name)),
       moving AS (
         SELECT r.id, w.plain FROM runs r JOIN wanted w ON w.name = r.queue_name
         WHERE r.environment_id = $1 AND r.list_status = 'LIVE' AND r.status = ANY ($3::text[])
           AND r.claim_from_runs <> w.plain AND r.concurrency_limits IS NULL AND r.gates IS NULL AND r.rate_limit IS NULL
         ${options.executing ? "ORDER BY r.id FOR UPDATE OF r" : "FOR UPDATE OF r SKIP LOCKED"})
       UPDATE runs r SET claim_from_runs = moving.plain FROM moving WHERE r.id = moving.id
       RETURNING r.id, r.queue_name,
         (r.status = 'QUEUED' AND r.available_at IS NULL) OR (r.status = 'WAITING' AND r.resume_due_at IS NOT NULL) AS ready`,
      [environmentId, queues, statuses],
    );
    const ready = rows.filter((r) => r.ready);
    await deps.dispatcher.dispatch(tx, ready.map((r) => ({ kind: "start" as const, runId: r.id, environmentId, queueName: r.queue_name })), now);
    return rows.length;
  });
}
