import { Gauge, type Registry } from "prom-client";
import type { Queryable } from "@svc/runtime/db";
import { unservedRunCounts, type Clock } from "@svc/runtime/engine";

interface QueueRow {
  queue_name: string;
  queued: number;
  waiting: number;
  oldest_queued_at: Date | null;
}

/**
 * One statement for the database-wide gauges: per queue, the runs ready to start (QUEUED, a retry's
 * backoff over), how long the oldest of them has been ready (since it became QUEUED, `updated_at`,
 * or its retry came due: a fired delay or retry clears delay_until/available_at, so they cannot
 * say it), and the runs WAITING. It reads only
 * live runs (QUEUED and WAITING) but, without an index on status (one would cost every run update
 * its HOT update), Postgres scans the runs table: a scrape costs about what a `SELECT count(*)
 * FROM runs` does.
 */
const QUEUE_STATE_SQL = `
  SELECT queue_name,
         count(*) FILTER (WHERE status = 'QUEUED' AND (available_at IS NULL OR available_at <= $1))::int AS queued,
         count(*) FILTER (WHERE status = 'WAITING')::int AS waiting,
         min(greatest(updated_at, available_at)) FILTER (WHERE status = 'QUEUED' AND (available_at IS NULL OR available_at <= $1)) AS oldest_queued_at
    FROM runs WHERE status IN ('QUEUED', 'WAITING') GROUP BY queue_name`;

/**
 * Per rate-limited queue (a queue whose tasks registered a rateLimit, or with live runs that carry
 * their own, in any environment), the ready runs that wait for their rate key's slot now
 * (sql/functions/svc_rate_wait.sql). Reads nothing else when no queue has a rate limit.
 */
const RATE_WAITING_SQL = `
  SELECT q.queue_name, sum(w.waiting)::int AS waiting
    FROM (SELECT environment_id, queue_name FROM worker_tasks WHERE rate_limit IS NOT NULL
          UNION SELECT environment_id, queue_name FROM runs WHERE rate_limit IS NOT NULL AND list_status = 'LIVE') q
    CROSS JOIN LATERAL svc_rate_wait(q.environment_id, q.queue_name, NULL, $1, 2147483647) w
   GROUP BY q.queue_name`;

/**
 * svc_runs_waiting, svc_queue_depth{queue}, svc_queue_oldest_age_seconds{queue},
 * svc_runs_unserved{task} and svc_queue_rate_limited{queue}: read from the database when scraped
 * (the queries above and unservedRunCounts, once per scrape for all five). Every API replica reports
 * the same database-wide values. A queue that emptied is reported as 0 until the process restarts,
 * and then no longer.
 */
export function registerDatabaseGauges(registry: Registry, db: Queryable, clock: Clock): void {
  // The three gauges' collect functions run together (the registry starts every metric's at
  // once): the first starts the query, the others await the same one.
  let pending: Promise<void> | null = null;
  const refreshed = () => (pending ??= refresh().finally(() => (pending = null)));
  const waiting = new Gauge({
    name: "svc_runs_waiting",
    help: "Runs WAITING on a waitpoint (token, wait, child run, batch), database-wide",
    registers: [registry],
    collect: refreshed,
  });
  const depth = new Gauge({
    name: "svc_queue_depth",
    help: "Runs QUEUED and ready to start, per queue (database-wide, all environments)",
    labelNames: ["queue"] as const,
    registers: [registry],
    collect: refreshed,
  });
  const oldest = new Gauge({
    name: "svc_queue_oldest_age_seconds",
    help: "How long the oldest run ready to start has been queued, per queue (0 when the queue is empty)",
    labelNames: ["queue"] as const,
    registers: [registry],
    collect: refreshed,
  });
  const unserved = new Gauge({
    name: "svc_runs_unserved",
    help: "Runs QUEUED for a task no live worker of their environment serves, per task (database-wide): they stay queued until one starts",
    labelNames: ["task"] as const,
    registers: [registry],
    collect: refreshed,
  });
  const rateWaiting = new Gauge({
    name: "svc_queue_rate_limited",
    help: "Runs QUEUED and ready that wait for their rate limit's slot, per queue with a rateLimit (database-wide, all environments)",
    labelNames: ["queue"] as const,
    registers: [registry],
    collect: refreshed,
  });
  const seen = new Set<string>();
  const seenUnserved = new Set<string>();
  const seenRated = new Set<string>();
  async function refresh() {
    const now = clock.now();
    const [{ rows }, unservedRows, rated] = await Promise.all([
      db.query<QueueRow>(QUEUE_STATE_SQL, [now]),
      unservedRunCounts(db, now),
      db.query<{ queue_name: string; waiting: number }>(RATE_WAITING_SQL, [now]),
    ]);
    // A queue's rate limit gone (its tasks redeployed without one) drops out of the query: it reads 0.
    for (const queue of seenRated) rateWaiting.set({ queue }, 0);
    for (const row of rated.rows) {
      seenRated.add(row.queue_name);
      rateWaiting.set({ queue: row.queue_name }, row.waiting);
    }
    const unservedNow = new Set<string>();
    for (const row of unservedRows) {
      unservedNow.add(row.task);
      seenUnserved.add(row.task);
      unserved.set({ task: row.task }, row.queued);
    }
    for (const task of seenUnserved) if (!unservedNow.has(task)) unserved.set({ task }, 0);
    let totalWaiting = 0;
    const present = new Set<string>();
    for (const row of rows) {
      totalWaiting += row.waiting;
      present.add(row.queue_name);
      seen.add(row.queue_name);
      depth.set({ queue: row.queue_name }, row.queued);
      oldest.set({ queue: row.queue_name }, row.oldest_queued_at ? Math.max(0, now.getTime() - row.oldest_queued_at.getTime()) / 1000 : 0);
    }
    for (const queue of seen) {
      if (present.has(queue)) continue;
      depth.set({ queue }, 0);
      oldest.set({ queue }, 0);
    }
    waiting.set(totalWaiting);
  }
}
