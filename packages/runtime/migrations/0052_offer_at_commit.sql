-- A run triggered inside the caller's transaction (svc_trigger) is offered to a worker when that
-- transaction commits, as a run triggered over HTTP is offered by the statement that inserts it
-- (engine/runs/transitions/offer-start.ts): no claim statement between the commit and the start.
--
-- `offer_at_commit`: set by svc_trigger_run on a single run that could start at once (QUEUED, its
-- queue not limited, no TTL). The deferred constraint trigger below runs svc_offer_at_commit for
-- such a row at COMMIT (not when the row is written: the caller's transaction may stay open long
-- after, and an offer's lease must not run meanwhile). Added with a constant default: no rewrite.
ALTER TABLE runs ADD COLUMN offer_at_commit boolean NOT NULL DEFAULT false;

-- The function's current text lives in sql/functions/svc_offer_at_commit.sql; this first version
-- lets the trigger be created here.
CREATE FUNCTION svc_offer_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_runs_ready', NEW.environment_id);
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER runs_offer_at_commit AFTER INSERT ON runs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.offer_at_commit)
  EXECUTE FUNCTION svc_offer_at_commit();
