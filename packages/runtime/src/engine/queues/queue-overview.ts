import type { Queryable } from "../../db/queryable.ts";

/** One queue of an environment as the dashboard shows it: its runs by state and its limit. */
export interface QueueOverview {
  queue: string;
  /** QUEUED and ready to start (no retry backoff ahead). */
  queued: number;
  /** When the oldest of those became ready; null when none is. */
  oldestQueuedAt: Date | null;
  /** Taken by a worker: DEQUEUED and EXECUTING (offered resumes included). */
  running: number;
  /** WAITING on a waitpoint (token, wait, child run, batch). */
  waiting: number;
  /** Not ready yet: DELAYED, and QUEUED in a retry's backoff. */
  delayed: number;
  /** The strictest concurrencyLimit its tasks registered; null: unlimited. */
  concurrencyLimit: number | null;
  /**
   * Its rateLimit as its tasks registered it (the lowest rate, as the claim applies it), with the
   * ready runs that wait for their rate key's slot now (`waiting`); null: no rate limit.
   */
  rateLimit: { limit: number; periodMs: number; waiting: number } | null;
  /**
   * Whether some of its live runs carry their own rate (a trigger's `rateLimit: { limit, period }`),
   * with the ready runs that wait for a slot now, by any bound (the same count as `rateLimit.waiting`);
   * null: none do.
   */
  ownRates: { waiting: number } | null;
  /** An operator's override of that limit (queue-controls.ts), in force until reset; null: none. */
  limitOverride: number | null;
  /** Paused by an operator: none of its runs start. */
  paused: boolean;
  /** The tasks registered on it, and the tasks of its runs counted here, sorted. */
  tasks: string[];
}

interface QueueRow {
  queue: string;
  queued: number;
  oldest_queued_at: Date | null;
  running: number;
  waiting: number;
  delayed: number;
  concurrency_limit: number | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  rate_waiting: number | null;
  own_rates: boolean;
  concurrency_limit_override: number | null;
  paused: boolean | null;
  tasks: string[];
}

/**
 * Per queue of the environment: its unfinished runs by state, what its workers registered
 * (worker_tasks), so a queue that was declared but holds no run is listed too, with zeros, and
 * what an operator set on it (queues: paused, a limit override). One
 * statement. A run's `updated_at` is when it last changed state (every transition sets it, nothing
 * else does), so for a QUEUED run `greatest(updated_at, available_at)` is when it became ready:
 * its trigger, its delay's end, or its retry backoff's end.
 *
 * Cost: there is no index on `status` (one would cost every run update its HOT update, see
 * migrations 0006 and 0012), so Postgres scans the whole runs table, whatever the environment's
 * share of it: 220–310 ms at 1.2 million runs (880 MB) on a 2-vCPU machine, growing with the
 * table. A partial index `(environment_id, queue_name) WHERE finished_at IS NULL` makes it ~12 ms,
 * but costs every finishing update its HOT update (finished_at changes): measured over trigger,
 * claim and finish, HOT updates fell from 86 % to 43 %, WAL grew 19 % and time 30 %. So call this
 * for a page someone looks at, not on a timer.
 */
export async function queueOverview(db: Queryable, environmentId: string, now: Date): Promise<QueueOverview[]> {
  const { rows } = await db.query<QueueRow>(
    `WITH live AS (
       SELECT queue_name,
              count(*) FILTER (WHERE status = 'QUEUED' AND (available_at IS NULL OR available_at <= $2))::int AS queued,
              min(greatest(updated_at, available_at)) FILTER (WHERE status = 'QUEUED' AND (available_at IS NULL OR available_at <= $2)) AS oldest_queued_at,
              count(*) FILTER (WHERE status IN ('DEQUEUED', 'EXECUTING'))::int AS running,
              count(*) FILTER (WHERE status = 'WAITING')::int AS waiting,
              count(*) FILTER (WHERE status = 'DELAYED' OR (status = 'QUEUED' AND available_at > $2))::int AS delayed,
              array_agg(DISTINCT task_identifier) AS tasks
         FROM runs
        WHERE environment_id = $1 AND status IN ('QUEUED', 'DEQUEUED', 'EXECUTING', 'WAITING', 'DELAYED')
        GROUP BY queue_name),
     declared AS (
       SELECT queue_name, min(concurrency_limit) AS concurrency_limit, array_agg(task_identifier) AS tasks,
              (array_agg(rate_limit ORDER BY rate_limit::float8 / rate_period_ms, rate_period_ms DESC) FILTER (WHERE rate_limit IS NOT NULL))[1] AS rate_limit,
              (array_agg(rate_period_ms ORDER BY rate_limit::float8 / rate_period_ms, rate_period_ms DESC) FILTER (WHERE rate_limit IS NOT NULL))[1] AS rate_period_ms
         FROM worker_tasks WHERE environment_id = $1 GROUP BY queue_name),
     own AS (
       SELECT DISTINCT queue_name AS own_queue FROM runs WHERE environment_id = $1 AND rate_limit IS NOT NULL AND list_status = 'LIVE')
     SELECT queue_name AS queue,
            coalesce(live.queued, 0) AS queued, live.oldest_queued_at,
            coalesce(live.running, 0) AS running, coalesce(live.waiting, 0) AS waiting, coalesce(live.delayed, 0) AS delayed,
            declared.concurrency_limit, declared.rate_limit, declared.rate_period_ms, q.concurrency_limit_override, q.paused,
            own.own_queue IS NOT NULL AS own_rates,
            -- Runs waiting for their rate (sql/functions/svc_rate_wait.sql): only queues with one.
            CASE WHEN declared.rate_limit IS NOT NULL OR own.own_queue IS NOT NULL THEN (SELECT w.waiting FROM svc_rate_wait($1, queue_name, NULL, $2, 2147483647) w) END AS rate_waiting,
            ARRAY(SELECT DISTINCT t FROM unnest(coalesce(declared.tasks, '{}') || coalesce(live.tasks, '{}')) t ORDER BY t) AS tasks
       FROM live FULL JOIN declared USING (queue_name)
       LEFT JOIN own ON own.own_queue = live.queue_name
       LEFT JOIN queues q ON q.environment_id = $1 AND q.name = queue_name
      ORDER BY queue_name`,
    [environmentId, now],
  );
  return rows.map((r) => ({
    queue: r.queue,
    queued: r.queued,
    oldestQueuedAt: r.oldest_queued_at,
    running: r.running,
    waiting: r.waiting,
    delayed: r.delayed,
    concurrencyLimit: r.concurrency_limit,
    rateLimit: r.rate_limit === null || r.rate_period_ms === null ? null : { limit: r.rate_limit, periodMs: r.rate_period_ms, waiting: r.rate_waiting ?? 0 },
    ownRates: r.own_rates ? { waiting: r.rate_waiting ?? 0 } : null,
    limitOverride: r.concurrency_limit_override,
    paused: r.paused ?? false,
    tasks: r.tasks,
  }));
}
