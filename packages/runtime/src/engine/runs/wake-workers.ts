import { prepared, type Queryable } from "../../db/queryable.ts";
import { CHANNELS } from "../channels.ts";

/** Runs of one queue, in one environment, that just became ready to be claimed. */
export interface ReadyRuns {
  environmentId: string;
  queueName: string;
  count: number;
}

/** The channel a worker hears its wake-ups on. */
export function wakeChannel(workerId: string): string {
  return CHANNELS.wakePrefix + workerId;
}

/**
 * Wakes, for each queue, the workers that should claim its ready runs from `runs`, in the
 * transaction that made them ready (the NOTIFYs go out when it commits). The registry (`workers`:
 * live, its LISTEN connection holding its lock, so that it is there to hear it, as for offers; and
 * the queues it serves, `workers.queues`) says who:
 *
 * - workers with a free slot (`full_since` NULL) in random order, as many as it takes for their
 *   slots to cover the runs: one for a single trigger, all of them for a batch larger than their
 *   slots together;
 * - every live worker of the queue when all are full: a wake-up costs a full worker nothing but a
 *   note that runs are waiting, so the first one with a free slot claims them;
 * - nobody registered for the queue (a registry entry being renewed): the environment's
 *   svc_runs_ready channel, which every worker of the environment hears.
 *
 * A worker that is woken and cannot take them all (its row said free a moment too long), dies, or
 * misses the NOTIFY leaves them to the others' polls (the worker's pollIntervalMs). One statement
 * for all queues; a worker woken for several gets one NOTIFY naming them all (queue names, one per
 * line: a queue name may hold a space, never a line break).
 */
export async function wakeWorkers(tx: Queryable, ready: ReadyRuns[], now: Date): Promise<void> {
  if (ready.length === 0) return;
  await tx.query(prepared(
    "svc_wake_workers",
    `WITH wanted AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS w(environment_id, queue, runs)
     ),
     ${wakeCtes("$4")}
     SELECT n FROM woke`,
    [ready.map((r) => r.environmentId), ready.map((r) => r.queueName), ready.map((r) => r.count), now],
  ));
}

/**
 * wakeWorkers as common table expressions, for a statement that has a CTE `wanted`
 * (environment_id, queue, runs: the ready runs of each queue) and the time `now` (SQL). The last,
 * `woke`, is one row, `n`, the NOTIFYs sent; the statement must read it for them to be sent.
 * Nothing wanted reads nothing: not the registry, and no listener's lock.
 */
export function wakeCtes(now: string): string {
  return `live AS MATERIALIZED (
       SELECT wk.id, wk.environment_id, wk.queues, coalesce(wk.slots, 1) AS slots, wk.full_since IS NOT NULL AS is_full, random() AS draw
       FROM workers wk
       WHERE wk.environment_id IN (SELECT environment_id FROM wanted) AND wk.queues IS NOT NULL AND wk.alive_until > ${now}
         AND NOT pg_try_advisory_xact_lock_shared(wk.listener_lock)
     ),
     ranked AS (
       SELECT w.queue, l.id, l.is_full, w.runs,
              sum(l.slots) OVER (PARTITION BY w.environment_id, w.queue ORDER BY l.is_full, l.draw ROWS UNBOUNDED PRECEDING) - l.slots AS slots_before,
              bool_and(l.is_full) OVER (PARTITION BY w.environment_id, w.queue) AS all_full
       FROM wanted w JOIN live l ON l.environment_id = w.environment_id AND w.queue = ANY (l.queues)
     ),
     woken AS (
       SELECT id, string_agg(queue, E'\\n') AS queues FROM ranked
       WHERE all_full OR (NOT is_full AND slots_before < runs)
       GROUP BY id
     ),
     woke AS (
       SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM wanted) THEN 0 ELSE
         (SELECT count(pg_notify('${CHANNELS.wakePrefix}' || id, queues)) FROM woken)
         + (SELECT count(pg_notify('${CHANNELS.runsReady}', environment_id)) FROM (
             SELECT DISTINCT w.environment_id FROM wanted w
             WHERE NOT EXISTS (SELECT 1 FROM ranked r WHERE r.queue = w.queue)) nobody) END AS n
     )`;
}

/**
 * How many waiting runs a run that freed a slot reads to find the queues waiting for it
 * (wakeLimitWaiters, wakeGateWaiters): a longer backlog costs no more, and a queue none of them is
 * in waits for its workers' next poll.
 */
export const WAITERS_READ = 1000;

/**
 * Wakes, for each queue of `waiting` (one slot was freed), a worker of it with a free slot
 * (wakeWorkers, one run each), and returns the queues; nothing to wake costs no statement.
 */
export async function wakeOneSlotEach(db: Queryable, waiting: { environment_id: string; queue_name: string }[], now: Date): Promise<string[]> {
  if (waiting.length === 0) return [];
  await wakeWorkers(db, waiting.map((w) => ({ environmentId: w.environment_id, queueName: w.queue_name, count: 1 })), now);
  return waiting.map((w) => w.queue_name);
}
