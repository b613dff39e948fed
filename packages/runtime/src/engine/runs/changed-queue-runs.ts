import { withTransaction, type Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";

/**
 * A worker's queues as they are registered now (its registration committed): the runs of a queue
 * that has a concurrencyLimit now may have been queued while it had none, and the reverse, and
 * each kind is taken by another claim (runs.claim_from_runs: the plain claim, or the queue's own,
 * which counts the limit). Moves the live runs of `queues` that are on the wrong side (queued,
 * delayed, waiting; an executing run finishes where it is) and wakes the workers for those that
 * are ready. Returns how many runs moved.
 *
 * What each start reads (migration 0057): for a plain queue, its live runs on the limited side
 * (index runs_limited_live: none unless it lost its limit); for a limited queue, its live runs only
 * when `queues.runs_limited` says they were last moved to the plain side, or never (it got its
 * limit since): the side it records, in the same transaction. A trigger that read the queue as it
 * was just before the registration committed may still leave one run on the old side: on the
 * plain side of a limited queue it is counted outside the limit once; on the limited side of a
 * plain queue, the next start of any of the queue's workers moves it.
 *
 * With `executing` (an operator paused a queue or changed its limit: engine/queues/queue-controls.ts)
 * the queue's executing runs move too, so that its claim counts them against the new limit, and
 * rows another claim holds are waited for rather than skipped (in id order, so that two changes
 * never wait on each other crosswise): a run a plain claim is taking at this moment is moved once
 * that claim commits, and counted. A limited queue's runs are then always read.
 *
 * A run that holds a named concurrency limit, has gates or its own rate never moves: the limited
 * claim always takes it.
 */
export async function moveRunsOfChangedQueues(deps: Pick<EngineDeps, "db" | "dispatcher">, environmentId: string, queues: string[], now: Date, options: { executing?: boolean } = {}): Promise<number> {
  if (queues.length === 0) return 0;
  const statuses = options.executing ? ["QUEUED", "DELAYED", "WAITING", "PENDING_VERSION", "EXECUTING"] : ["QUEUED", "DELAYED", "WAITING", "PENDING_VERSION"];
  const lock = options.executing ? "ORDER BY r.id FOR UPDATE OF r" : "FOR UPDATE OF r SKIP LOCKED";
  return withTransaction(deps.db, async (tx) => {
    const { rows: sides } = await tx.query<{ name: string; limited: boolean; recorded: boolean | null }>(
      `SELECT q.name, (SELECT l.limited FROM svc_queue_is_limited($1, q.name) l) AS limited, qu.runs_limited AS recorded
         FROM unnest($2::text[]) AS q(name) LEFT JOIN queues qu ON qu.environment_id = $1 AND qu.name = q.name`,
      [environmentId, queues],
    );
    const toPlain = sides.filter((s) => !s.limited).map((s) => s.name);
    const toLimited = sides.filter((s) => s.limited && (options.executing || s.recorded !== true)).map((s) => s.name);
    const moved = [
      ...(await moveSide(tx, environmentId, toPlain, true, statuses, lock)),
      ...(await moveSide(tx, environmentId, toLimited, false, statuses, lock)),
    ];
    await tx.query(
      `UPDATE queues q SET runs_limited = s.limited FROM unnest($2::text[], $3::boolean[]) AS s(name, limited)
        WHERE q.environment_id = $1 AND q.name = s.name AND q.runs_limited IS DISTINCT FROM s.limited`,
      [environmentId, sides.map((s) => s.name), sides.map((s) => s.limited)],
    );
    const ready = moved.filter((r) => r.ready);
    await deps.dispatcher.dispatch(tx, ready.map((r) => ({ kind: "start" as const, runId: r.id, environmentId, queueName: r.queue_name })), now);
    return moved.length;
  });
}

/**
 * The live runs of queues `$2` (environment `$1`, statuses `$3`) that are on the other side than
 * `plain` and may move. To the plain side they are read from runs_limited_live (its predicate
 * written out, so that the planner can use it); to the limited side, from the environment's live
 * runs (runs_status_list).
 */
export function runsToMoveSql(plain: boolean): string {
  return `SELECT r.id FROM runs r
    WHERE r.environment_id = $1 AND r.queue_name = ANY ($2::text[]) AND r.list_status = 'LIVE' AND r.status = ANY ($3::text[])
      AND ${plain ? "NOT r.claim_from_runs" : "r.claim_from_runs"} AND r.concurrency_limits IS NULL AND r.gates IS NULL AND r.rate_limit IS NULL`;
}

/** Moves the live runs of `queues` to the plain claim's side (`plain`) or the limited one's. */
async function moveSide(tx: Queryable, environmentId: string, queues: string[], plain: boolean, statuses: string[], lock: string) {
  if (queues.length === 0) return [];
  const { rows } = await tx.query<{ id: string; queue_name: string; ready: boolean }>(
    `WITH moving AS (${runsToMoveSql(plain)} ${lock})
     UPDATE runs r SET claim_from_runs = ${plain} FROM moving WHERE r.id = moving.id
     RETURNING r.id, r.queue_name,
       (r.status = 'QUEUED' AND r.available_at IS NULL) OR (r.status = 'WAITING' AND r.resume_due_at IS NOT NULL) AS ready`,
    [environmentId, queues, statuses],
  );
  return rows;
}
