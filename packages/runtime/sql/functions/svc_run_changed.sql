-- BEFORE UPDATE trigger on runs (migration 0038), fired only when a column a realtime subscriber
-- sees changed: stamps the row with the top-level transaction (subscriptions read "what changed
-- since my snapshot" from it), and, when some API process watches the environment, NOTIFYs
-- `svc_run_changes` with `[environment_id, run id, batch id, tags]` so that it wakes exactly the
-- subscribers the run may concern. The NOTIFY is a wake-up, never the data: the subscriber reads
-- the row. Tags are dropped from a payload that would pass NOTIFY's 8000 bytes (the process then
-- wakes every tag subscriber of the environment): a write must never fail for a wake-up.
CREATE OR REPLACE FUNCTION svc_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  notice text;
BEGIN
  -- Taken first: a writer whose check below misses a watch registered at this moment has its
  -- transaction id below the horizon the registering process waits past (realtime watches).
  NEW.change_xid := pg_current_xact_id();
  IF EXISTS (SELECT 1 FROM realtime_watches w WHERE w.environment_id = NEW.environment_id) THEN
    notice := json_build_array(NEW.environment_id, NEW.id, NEW.batch_id, NEW.tags)::text;
    IF octet_length(notice) > 7900 THEN
      notice := json_build_array(NEW.environment_id, NEW.id, NEW.batch_id, NULL)::text;
    END IF;
    PERFORM pg_notify('svc_run_changes', notice);
  END IF;
  RETURN NEW;
END;
$$;
