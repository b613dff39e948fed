import { prepared, type Queryable } from "@svc/runtime/db";
import { BOSS_NOTIFY_CHANNEL } from "./boss.ts";

/**
 * Prefix of a worker's own wake-up channel (+ its id). Payload: the pg-boss queues, separated by
 * spaces, that new jobs were inserted into (queue names never hold a space: names.ts).
 */
export const WAKE_CHANNEL_PREFIX = "svc_jobs_";

/** The channel a worker hears its wake-ups on. */
export function wakeChannel(workerId: string): string {
  return WAKE_CHANNEL_PREFIX + workerId;
}

/** New jobs of one pg-boss queue, in one environment. */
export interface InsertedJobs {
  environmentId: string;
  queue: string;
  count: number;
}

/**
 * Wakes, for each queue, the workers that should fetch its new jobs, in the inserting transaction
 * (the NOTIFYs go out when it commits, as pg-boss's own did). The registry (`workers`: live, its
 * LISTEN connection holding its lock, so that it is there to hear it, as for offers; and the pg-boss
 * queues it consumes, migration 0031) says who:
 *
 * - workers with a free slot (`full_since` NULL, migration 0028) in random order, as many as it
 *   takes for their slots to cover the jobs: one for a single trigger, all of them for a batch
 *   larger than their slots together;
 * - every live consumer when all are full: a wake-up costs a full worker no fetch, only a note that
 *   the queue has jobs, so the first one with a free slot takes them;
 * - nobody registered (a worker from before 0031, a registry entry being renewed): pg-boss's
 *   channel, which every worker hears, as before.
 *
 * A worker that is woken and cannot take them all (its row said free a moment too long), dies, or
 * misses the NOTIFY leaves them to the others' polls (JobConsumer's pollIntervalMs). One statement
 * for all queues; a worker woken for several gets one NOTIFY naming them all. The dispatcher runs
 * it inside pg-boss's last insert (insertWithWakeUp); this, a statement of its own, is the fallback.
 */
export async function wakeWorkers(tx: Queryable, jobs: InsertedJobs[], now: Date): Promise<void> {
  if (jobs.length === 0) return;
  await tx.query(prepared("svc_wake_workers", `WITH ${wakeCtes(0)} SELECT n FROM notices`, wakeValues(jobs, now)));
}

/**
 * pg-boss's insert statement (a plain INSERT: svc's queues have pg-boss's NOTIFY off, and svc asks
 * for no ids) with the wake-up of `jobs` in the same statement, so that waking costs no round trip
 * of its own; null when the text is not what that needs (another pg-boss version), and the caller
 * wakes with a statement of its own.
 */
export function insertWithWakeUp(insertText: string, insertValues: unknown[], jobs: InsertedJobs[], now: Date): { text: string; values: unknown[] } | null {
  if (!/^\s*INSERT\s/i.test(insertText) || /\bRETURNING\b/i.test(insertText)) return null;
  return {
    // The wake-up's CTEs run because the result refers to them; no row comes back (pg-boss returns
    // no ids then, which svc never asks for).
    text: `WITH inserted AS (${insertText}), ${wakeCtes(insertValues.length)} SELECT NULL::text AS id WHERE (SELECT sum(n) FROM notices) < 0`,
    values: [...insertValues, ...wakeValues(jobs, now)],
  };
}

function wakeValues(jobs: InsertedJobs[], now: Date): unknown[] {
  return [jobs.map((j) => j.environmentId), jobs.map((j) => j.queue), jobs.map((j) => j.count), now, WAKE_CHANNEL_PREFIX, BOSS_NOTIFY_CHANNEL];
}

/** The wake-up's CTEs, its parameters numbered from `offset` + 1; `notices` counts the NOTIFYs sent. */
function wakeCtes(offset: number): string {
  const $ = (n: number) => `$${offset + n}`;
  return `wanted AS (
         SELECT * FROM unnest(${$(1)}::text[], ${$(2)}::text[], ${$(3)}::int[]) AS w(environment_id, queue, jobs)
       ),
       live AS MATERIALIZED (
         SELECT wk.id, wk.environment_id, wk.queues, coalesce(wk.slots, 1) AS slots, wk.full_since IS NOT NULL AS is_full, random() AS draw
         FROM workers wk
         WHERE wk.environment_id IN (SELECT environment_id FROM wanted) AND wk.queues IS NOT NULL AND wk.alive_until > ${$(4)}
           AND NOT pg_try_advisory_xact_lock_shared(wk.listener_lock)
       ),
       ranked AS (
         SELECT w.queue, l.id, l.is_full, w.jobs,
                sum(l.slots) OVER (PARTITION BY w.queue ORDER BY l.is_full, l.draw ROWS UNBOUNDED PRECEDING) - l.slots AS slots_before,
                bool_and(l.is_full) OVER (PARTITION BY w.queue) AS all_full
         FROM wanted w JOIN live l ON l.environment_id = w.environment_id AND w.queue = ANY (l.queues)
       ),
       woken AS (
         SELECT id, string_agg(queue, ' ') AS queues FROM ranked
         WHERE all_full OR (NOT is_full AND slots_before < jobs)
         GROUP BY id
       ),
       notices AS (
         SELECT count(pg_notify(${$(5)} || id, queues)) AS n FROM woken
         UNION ALL
         SELECT count(pg_notify(${$(6)}, queue)) FROM wanted w WHERE NOT EXISTS (SELECT 1 FROM ranked r WHERE r.queue = w.queue)
       )`;
}
