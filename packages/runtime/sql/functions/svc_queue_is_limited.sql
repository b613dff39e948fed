-- Whether a run's queue has a concurrencyLimit or a rateLimit (migration 0047), as its workers
-- registered it, or is controlled by
-- an operator (paused, or its limit overridden: the queues table, migration 0046): such runs are
-- claimed by their queue's claim, which counts the limit (CLAIM_LIMITED_SQL,
-- engine/runs/transitions/claim-ready.ts), not by the plain claim, and are never offered. Read when
-- a run is inserted (runs.claim_from_runs) and when a worker registers a queue or an operator
-- changes one (engine/runs/changed-queue-runs.ts). One row, `limited`: the planner inlines a SQL
-- function that returns a set wherever it is called (in FROM, or in a scalar subquery), where a
-- scalar SQL function whose body holds a subquery (EXISTS) is never inlined, and is parsed and
-- planned again on every statement that calls it (~0.08 ms of each completion).
CREATE OR REPLACE FUNCTION svc_queue_is_limited(p_environment_id text, p_queue_name text) RETURNS TABLE (limited boolean)
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name
      AND (wt.concurrency_limit IS NOT NULL OR wt.rate_limit IS NOT NULL))
  OR EXISTS (
    SELECT 1 FROM queues q
    WHERE q.environment_id = p_environment_id AND q.name = p_queue_name AND (q.paused OR q.concurrency_limit_override IS NOT NULL))
$$;
