-- Triggers on worker_tasks and queues (migration 0057): a registration or an operator's control
-- that may change whether a queue is limited (svc_queue_is_limited) forgets the side its live runs
-- were last moved to (queues.runs_limited), so that the next start of one of its workers reads
-- them again (engine/runs/changed-queue-runs.ts). In the database, so that a process of an earlier
-- build, which moves runs without recording the side, cannot leave a stale record behind.
CREATE OR REPLACE FUNCTION svc_queue_side_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'queues' THEN
    NEW.runs_limited := NULL;
    RETURN NEW;
  END IF;
  UPDATE queues q SET runs_limited = NULL
    WHERE q.runs_limited IS NOT NULL
      AND ((TG_OP <> 'DELETE' AND q.environment_id = NEW.environment_id AND q.name = NEW.queue_name)
        OR (TG_OP <> 'INSERT' AND q.environment_id = OLD.environment_id AND q.name = OLD.queue_name));
  RETURN NULL;
END;
$$;
