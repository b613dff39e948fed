-- Whether a run's queue has a concurrencyLimit, as its workers registered it: such runs take a
-- slot of their queue to resume, like a start, instead of being offered or claimed on NOTIFY.
-- One definition for svc_complete_waitpoint and the TypeScript that hands resumes to pg-boss
-- (LIMITED_QUEUE_TEST). A single-statement SQL function: the planner inlines it.
CREATE OR REPLACE FUNCTION svc_queue_is_limited(p_environment_id text, p_queue_name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name AND wt.concurrency_limit IS NOT NULL)
$$;
