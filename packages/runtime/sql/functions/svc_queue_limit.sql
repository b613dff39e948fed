-- The limit a limited queue's claim (CLAIM_LIMITED_SQL, engine/runs/transitions/claim-ready.ts)
-- counts, per concurrency key, and whether it may start runs: an operator's override (the queues
-- table, migration 0046) else the strictest concurrencyLimit its tasks registered, else none
-- (2147483647: a queue that is only paused); `paused`, no new starts (resumes of runs already
-- started go on, under the limit). One row. A set-returning SQL function, so the planner inlines it
-- into the claim (see svc_queue_is_limited).
CREATE OR REPLACE FUNCTION svc_queue_limit(p_environment_id text, p_queue_name text) RETURNS TABLE (n integer, paused boolean)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(
           (SELECT q.concurrency_limit_override FROM queues q WHERE q.environment_id = p_environment_id AND q.name = p_queue_name),
           (SELECT min(wt.concurrency_limit) FROM worker_tasks wt WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name),
           2147483647),
         coalesce((SELECT q.paused FROM queues q WHERE q.environment_id = p_environment_id AND q.name = p_queue_name), false)
$$;
