-- Of a rate-limited queue's ready starts (QUEUED, no backoff; of tasks `p_tasks`, all when NULL; its
-- `p_window` oldest), how many wait for their rate key's slot at `p_now` (`waiting`) and when the
-- first of them may start (`due_at`; NULL when none waits, or when each waits for runs before it).
-- A run waits while, counting the starts its key made in a period that bounds it (its queue's, its
-- own: runs.rate_limit, migration 0055) and the ready starts of its key before it, that bound is
-- full; it may start when the newest start that fills it leaves the period, for every bound that
-- holds it. The claim's rule (RATE_ALLOWS, engine/runs/rate-limit-sql.ts) on the same logs
-- (rate_limit_windows: a key's log of that period, else its longest). Read by the worker after a
-- claim that took fewer runs than it could (it sets a timer for `due_at`), by the queues page and by
-- the API's metrics. One row; nothing waits in a queue whose runs no rate bounds: (NULL, 0).
CREATE OR REPLACE FUNCTION svc_rate_wait(p_environment_id text, p_queue_name text, p_tasks text[], p_now timestamptz, p_window int)
RETURNS TABLE (due_at timestamptz, waiting int)
LANGUAGE sql STABLE AS $$
  WITH rate AS (
    SELECT wt.rate_limit AS n, wt.rate_period_ms AS ms FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name AND wt.rate_limit IS NOT NULL
    ORDER BY wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC LIMIT 1),
  ready AS (
    SELECT r.id, r.rk, row_number() OVER (PARTITION BY r.rk ORDER BY r.created_at, r.id) AS rank, r.rl, r.rp FROM (
      SELECT r.id, coalesce(r.rate_limit_key, '') AS rk, r.rate_limit AS rl, r.rate_period_ms AS rp, r.created_at FROM runs r
      WHERE r.environment_id = p_environment_id AND r.queue_name = p_queue_name AND NOT r.claim_from_runs
        AND r.status = 'QUEUED' AND r.available_at IS NULL AND (p_tasks IS NULL OR r.task_identifier = ANY (p_tasks))
      ORDER BY r.created_at, r.id LIMIT p_window) r),
  bounds AS (
    SELECT x.id, x.rk, x.rank, b.n, b.ms FROM ready x
    CROSS JOIN LATERAL (SELECT x.rl, x.rp WHERE x.rp IS NOT NULL UNION ALL SELECT rate.n, rate.ms FROM rate) b(n, ms)),
  log AS (
    SELECT p.rk, p.ms, e.at, sum(e.n) OVER (PARTITION BY p.rk, p.ms ORDER BY e.at DESC ROWS UNBOUNDED PRECEDING) AS newer
    FROM (SELECT DISTINCT rk, ms FROM bounds) p
    CROSS JOIN LATERAL (
      SELECT w.started_at, w.started_n FROM rate_limit_windows w
      WHERE w.environment_id = p_environment_id AND w.queue_name = p_queue_name AND w.rate_key = p.rk
      ORDER BY w.period_ms = p.ms DESC, w.period_ms DESC LIMIT 1) s
    CROSS JOIN LATERAL unnest(s.started_at, s.started_n) AS e(at, n)
    WHERE e.at > p_now - make_interval(secs => p.ms / 1000.0)),
  held AS (
    SELECT b.id, (SELECT max(l.at) FROM log l WHERE l.rk = b.rk AND l.ms = b.ms AND l.newer >= b.n - b.rank + 1)
      + make_interval(secs => b.ms / 1000.0) AS due_at, b.rank > b.n AS behind
    FROM bounds b
    WHERE b.rank + coalesce((SELECT max(l.newer) FROM log l WHERE l.rk = b.rk AND l.ms = b.ms), 0) > b.n),
  runs_held AS (
    SELECT h.id, CASE WHEN bool_or(h.behind) THEN NULL ELSE max(h.due_at) END AS due_at FROM held h GROUP BY h.id)
  SELECT min(h.due_at), count(*)::int FROM runs_held h
$$;
