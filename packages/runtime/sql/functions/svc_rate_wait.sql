-- Of a rate-limited queue's ready starts (QUEUED, no backoff; of tasks `p_tasks`, all when NULL; its
-- `p_window` oldest), how many wait for their rate key's slot at `p_now` (`waiting`) and when the
-- first of them may start (`due_at`: when the newest start that, with those before it, fills its
-- key's window of the last period leaves it; NULL when none waits). The log is rate_limit_windows
-- (migration 0047, engine/runs/rate-limit-sql.ts). Read by the worker after a claim that took fewer
-- runs than it could (it sets a timer for `due_at`), by the queues page and by the API's metrics.
-- One row; a queue without a rate limit: (NULL, 0).
CREATE OR REPLACE FUNCTION svc_rate_wait(p_environment_id text, p_queue_name text, p_tasks text[], p_now timestamptz, p_window int)
RETURNS TABLE (due_at timestamptz, waiting int)
LANGUAGE sql STABLE AS $$
  WITH rate AS (
    SELECT wt.rate_limit AS n, wt.rate_period_ms AS ms FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name AND wt.rate_limit IS NOT NULL
    ORDER BY wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC LIMIT 1),
  ready AS (
    SELECT coalesce(r.rate_limit_key, '') AS rk, count(*) AS n FROM (
      SELECT r.rate_limit_key FROM runs r
      WHERE r.environment_id = p_environment_id AND r.queue_name = p_queue_name AND NOT r.claim_from_runs
        AND r.status = 'QUEUED' AND r.available_at IS NULL AND (p_tasks IS NULL OR r.task_identifier = ANY (p_tasks))
      ORDER BY r.created_at, r.id LIMIT p_window) r
    GROUP BY 1),
  log AS (
    SELECT w.rate_key AS rk, e.at, sum(e.n) OVER (PARTITION BY w.rate_key ORDER BY e.at DESC ROWS UNBOUNDED PRECEDING) AS newer
    FROM rate_limit_windows w CROSS JOIN rate CROSS JOIN LATERAL unnest(w.started_at, w.started_n) AS e(at, n)
    WHERE w.environment_id = p_environment_id AND w.queue_name = p_queue_name AND w.rate_key IN (SELECT rk FROM ready)
      AND e.at > p_now - make_interval(secs => rate.ms / 1000.0)),
  used AS (
    SELECT log.rk, max(log.at) FILTER (WHERE log.newer >= rate.n) + make_interval(secs => rate.ms / 1000.0) AS due_at,
      rate.n - max(log.newer) AS room
    FROM log CROSS JOIN rate GROUP BY log.rk, rate.n, rate.ms)
  SELECT min(u.due_at) FILTER (WHERE u.room <= 0), coalesce(sum(greatest(ready.n - greatest(u.room, 0), 0)), 0)::int
  FROM ready JOIN used u ON u.rk = ready.rk
$$;
