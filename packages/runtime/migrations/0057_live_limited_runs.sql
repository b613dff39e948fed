-- A worker's start moves the live runs of its queues that sit on the wrong claim's side
-- (engine/runs/changed-queue-runs.ts). It read every live run of the environment to find them,
-- at each start: seconds with a long-waiting backlog, for every worker of a rolling deploy.
--
-- runs_limited_live: the live runs on the limited claim's side, by queue. A plain queue's start
-- reads only its entries here (none, unless its queue lost a limit or a trigger raced one).
-- Only runs of limited queues and runs holding named limits, gates or their own rate have an entry.
--
-- queues.runs_limited: the side the queue's live runs were last moved to (NULL: never moved).
-- A limited queue's start reads its live runs only when this says they were last moved to the
-- plain side, or never: when the queue got its limit. Built in the migration's transaction: one
-- read of `runs` (docs/migrations.md).
CREATE INDEX runs_limited_live ON runs (environment_id, queue_name) WHERE NOT claim_from_runs AND list_status = 'LIVE';
ALTER TABLE queues ADD COLUMN runs_limited boolean;

-- What may change a queue's side forgets the record: a task registered, re-registered with another
-- queue, limit or rate, or removed; an operator's pause or override. The function's current text
-- lives in sql/functions/svc_queue_side_changed.sql; this first version lets the triggers be
-- created here.
CREATE FUNCTION svc_queue_side_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_WHEN = 'BEFORE' THEN RETURN NEW; END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER worker_tasks_side_inserted AFTER INSERT OR DELETE ON worker_tasks
  FOR EACH ROW EXECUTE FUNCTION svc_queue_side_changed();
CREATE TRIGGER worker_tasks_side_updated AFTER UPDATE OF queue_name, concurrency_limit, rate_limit ON worker_tasks
  FOR EACH ROW WHEN (OLD.queue_name IS DISTINCT FROM NEW.queue_name OR OLD.concurrency_limit IS DISTINCT FROM NEW.concurrency_limit
    OR OLD.rate_limit IS DISTINCT FROM NEW.rate_limit)
  EXECUTE FUNCTION svc_queue_side_changed();
CREATE TRIGGER queues_side_controlled BEFORE UPDATE OF paused, concurrency_limit_override ON queues
  FOR EACH ROW WHEN (OLD.paused IS DISTINCT FROM NEW.paused OR OLD.concurrency_limit_override IS DISTINCT FROM NEW.concurrency_limit_override)
  EXECUTE FUNCTION svc_queue_side_changed();
