import type { Queryable } from "../../db/queryable.ts";
import { WAITERS_READ, wakeOneSlotEach } from "./wake-workers.ts";

/** A ready run `w` of a limited claim (as index runs_limited_ready holds them). */
const READY = `NOT w.claim_from_runs AND ((w.status = 'QUEUED' AND w.available_at IS NULL) OR (w.status = 'WAITING' AND w.resume_due_at IS NOT NULL))`;

/**
 * After run `runId` stopped executing, wakes the workers of the queues whose ready runs wait for a
 * pool it freed (gates, migration 0049): its own queue's, where runs of other queues gated on it
 * wait, and each of its gates' queues, where that queue's own runs and the runs gated on it wait.
 * Without this they would start at their workers' next poll: a trigger or a completion wakes only
 * its own queue's workers. Two reads (index runs_limited_ready for the gate queues' own runs,
 * runs_gated_live for gated runs), then wakeWorkers for one run of each such queue other than the
 * run's own (its worker claims that one again itself). Returns the queues woken.
 */
export async function wakeGateWaiters(db: Queryable, runId: string, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ environment_id: string; queue_name: string }>(
    `WITH ended AS (
       SELECT r.environment_id, r.queue_name, r.gates FROM runs r WHERE r.id = $1 AND r.status <> 'EXECUTING'),
     pools AS (
       SELECT e.queue_name AS q FROM ended e
       UNION SELECT g.queue FROM ended e CROSS JOIN LATERAL jsonb_to_recordset(e.gates) AS g(queue text) WHERE e.gates IS NOT NULL)
     SELECT DISTINCT x.environment_id, x.queue_name FROM (
       (SELECT w.environment_id, w.queue_name FROM ended e JOIN pools p ON p.q <> e.queue_name
          JOIN runs w ON w.environment_id = e.environment_id AND w.queue_name = p.q
        WHERE ${READY} LIMIT $2)
       UNION ALL
       (SELECT w.environment_id, w.queue_name FROM ended e JOIN runs w ON w.environment_id = e.environment_id
        WHERE w.gates IS NOT NULL AND w.list_status = 'LIVE' AND w.queue_name <> e.queue_name AND ${READY}
          AND EXISTS (SELECT 1 FROM jsonb_to_recordset(w.gates) AS g(queue text) WHERE g.queue IN (SELECT q FROM pools))
        LIMIT $2)) x`,
    [runId, WAITERS_READ],
  );
  return wakeOneSlotEach(db, rows, now);
}
