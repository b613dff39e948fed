import type { Queryable } from "../../db/queryable.ts";
import { WAITERS_READ, wakeOneSlotEach } from "../runs/wake-workers.ts";

/**
 * After run `runId` stopped executing (it finished, failed, waits or goes back to its queue), wakes
 * the workers of the queues that have runs ready to claim holding one of the named concurrency
 * limits it held: the slot it freed may be theirs, and nothing else says so (a trigger or a
 * completion wakes only its own queue's workers; without this they would wait for their next
 * poll). One read through index runs_named_live (the environment's live runs holding a limit),
 * then wakeWorkers for one run of each such queue (one slot was freed): a worker of each with a
 * free slot; they take turns at the named limits' lock, and the first takes the slot. A run that
 * held no named limit, or whose limits nobody else waits for, wakes nobody. Returns the queues
 * woken.
 */
export async function wakeLimitWaiters(db: Queryable, runId: string, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ environment_id: string; queue_name: string }>(
    `SELECT DISTINCT waiting.environment_id, waiting.queue_name FROM (
       SELECT w.environment_id, w.queue_name
       FROM runs r JOIN runs w ON w.environment_id = r.environment_id
       WHERE r.id = $1 AND r.concurrency_limits IS NOT NULL AND r.status <> 'EXECUTING'
         AND w.concurrency_limits IS NOT NULL AND w.list_status = 'LIVE' AND w.concurrency_limits && r.concurrency_limits
         AND ((w.status = 'QUEUED' AND w.available_at IS NULL) OR (w.status = 'WAITING' AND w.resume_due_at IS NOT NULL))
       LIMIT $2) waiting`,
    [runId, WAITERS_READ],
  );
  return wakeOneSlotEach(db, rows, now);
}
