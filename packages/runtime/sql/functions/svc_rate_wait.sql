-- Of a rate-limited queue's ready starts (QUEUED, no backoff; of tasks `p_tasks`, all when NULL; its
-- `p_window` oldest), how many wait for their rate key's slot at `p_now` (`waiting`) and when the
-- first of them may start (`due_at`; NULL when none waits, or when each waits for runs before it).
-- A run waits while, counting the starts its key made in a period that bounds it (its queue's, its
-- own: runs.rate_limit, migration 0055) and the ready starts of its key before it, that bound is
-- full; it may start when the newest start that fills it leaves the period (`due_at`: the first
-- such time of any key and bound). The claim's rule (RATE_ALLOWS, engine/runs/rate-limit-sql.ts)
-- on the same logs (rate_limit_windows: a key's log of that period, else its longest). Read by the
-- worker after a claim that took fewer runs than it could (it sets a timer for `due_at`), by the
-- queues page and by the API's metrics (every ready run: keys and bounds are joined, not searched
-- run by run). One row; nothing waits in a queue whose runs no rate bounds: (NULL, 0).
CREATE OR REPLACE FUNCTION svc_rate_wait(p_environment_id text, p_queue_name text, p_tasks text[], p_now timestamptz, p_window int)
RETURNS TABLE (due_at timestamptz, waiting int)
LANGUAGE sql STABLE AS $$
  WITH rate AS (
    SELECT wt.rate_limit AS n, wt.rate_period_ms AS ms FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name AND wt.rate_limit IS NOT NULL
    ORDER BY wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC LIMIT 1),
  ready AS (
    SELECT r.id, coalesce(r.rate_limit_key, '') AS rk, r.rate_limit AS rl, r.rate_period_ms AS rp, r.created_at FROM runs r
    WHERE r.environment_id = p_environment_id AND r.queue_name = p_queue_name AND NOT r.claim_from_runs
      AND r.status = 'QUEUED' AND r.available_at IS NULL AND (p_tasks IS NULL OR r.task_identifier = ANY (p_tasks))
    ORDER BY r.created_at, r.id LIMIT p_window),
  keys AS (SELECT x.rk, count(*) AS n FROM ready x GROUP BY x.rk),
  -- Runs with their own bound, ranked among their key's ready runs (only such keys are ranked).
  own AS (
    SELECT o.id, o.rk, o.rank, o.rl AS n, o.rp AS ms FROM (
      SELECT x.id, x.rk, x.rl, x.rp, row_number() OVER (PARTITION BY x.rk ORDER BY x.created_at, x.id) AS rank
      FROM ready x WHERE x.rk IN (SELECT y.rk FROM ready y WHERE y.rp IS NOT NULL)) o
    WHERE o.rp IS NOT NULL),
  log AS (
    SELECT p.rk, p.ms, e.at, sum(e.n) OVER (PARTITION BY p.rk, p.ms ORDER BY e.at DESC ROWS UNBOUNDED PRECEDING) AS newer
    FROM (SELECT k.rk, rate.ms FROM keys k CROSS JOIN rate UNION SELECT o.rk, o.ms FROM own o) p
    CROSS JOIN LATERAL (
      SELECT w.started_at, w.started_n FROM rate_limit_windows w
      WHERE w.environment_id = p_environment_id AND w.queue_name = p_queue_name AND w.rate_key = p.rk
      ORDER BY w.period_ms = p.ms DESC, w.period_ms DESC LIMIT 1) s
    CROSS JOIN LATERAL unnest(s.started_at, s.started_n) AS e(at, n)
    WHERE e.at > p_now - make_interval(secs => p.ms / 1000.0)),
  used AS (SELECT l.rk, l.ms, max(l.newer) AS used FROM log l GROUP BY l.rk, l.ms),
  -- The queue's bound, per key: its ready runs past its room (the limit less its starts in the
  -- period) wait.
  queue_held AS (
    SELECT k.rk, k.n AS ready, greatest(0, rate.n - coalesce(u.used, 0)) AS room, rate.n, rate.ms
    FROM keys k CROSS JOIN rate LEFT JOIN used u ON u.rk = k.rk AND u.ms = rate.ms),
  -- A run's own bound: it waits when its rank and its key's starts in its period pass it.
  own_held AS (
    SELECT o.id, o.rk, o.rank, o.n, o.ms FROM own o LEFT JOIN used u ON u.rk = o.rk AND u.ms = o.ms
    WHERE o.rank + coalesce(u.used, 0) > o.n),
  -- Per key and bound, the first run it holds that only time frees (not behind other held runs):
  -- it may start when the newest start that fills the bound for it leaves the period. A run held
  -- by two bounds waits for the later; the earlier still wakes the worker, whose claim then finds
  -- the later.
  first_held AS (
    SELECT q.rk, q.n, q.ms, q.room + 1 AS rank FROM queue_held q WHERE q.ready > q.room AND q.room < q.n
    UNION ALL
    SELECT h.rk, h.n, h.ms, min(h.rank) FROM own_held h WHERE h.rank <= h.n GROUP BY h.rk, h.n, h.ms),
  due AS (
    SELECT max(l.at) + make_interval(secs => f.ms / 1000.0) AS due_at
    FROM first_held f JOIN log l ON l.rk = f.rk AND l.ms = f.ms AND l.newer >= f.n - f.rank + 1
    GROUP BY f.rk, f.n, f.ms, f.rank)
  SELECT (SELECT min(d.due_at) FROM due d),
    ((SELECT coalesce(sum(q.ready - q.room), 0) FROM queue_held q WHERE q.ready > q.room)
     + (SELECT count(*) FROM own_held h WHERE NOT EXISTS (SELECT 1 FROM queue_held q WHERE q.rk = h.rk AND h.rank > q.room)))::int
$$;
