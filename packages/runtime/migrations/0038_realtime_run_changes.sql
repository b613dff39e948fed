-- Realtime run subscriptions (GET /realtime/v1/runs…, packages/api/src/realtime): what tells an
-- API process that a run a browser watches changed, without any transition having to remember it.
--
-- 1. `change_xid`: the top-level transaction that last changed what a subscriber sees of the run
--    (status, times, metadata, tags, output, error). A subscription's offset is the snapshot of its
--    last read, so "what changed since" is the rows whose change_xid that snapshot did not see,
--    read from the table: a lost NOTIFY, a replaced connection or a client away for an hour
--    loses nothing, and any API replica answers any offset. Not `xmin`: a row written inside a
--    subtransaction (fire-due-schedules' SAVEPOINT) carries a subtransaction id that snapshots
--    do not list. Inserts get it from the default (no trigger); updates from svc_run_changed,
--    which fires only when a column the row shape carries changed. Not indexed: updates stay HOT.
--    Added without a default first, so existing rows are not rewritten (NULL: seen by anyone).
ALTER TABLE runs ADD COLUMN change_xid xid8;
ALTER TABLE runs ALTER COLUMN change_xid SET DEFAULT pg_current_xact_id();

-- 2. `realtime_watches`: the environments some API process has subscribers in. Run changes NOTIFY
--    `svc_run_changes` only for those: a transaction that NOTIFYs takes a cluster-wide lock from
--    its commit's start to its end, so NOTIFYing commits cannot share a WAL flush (measured when
--    this was written: 8 writers committing single-run inserts, ~5,400/s without, ~2,300/s with a
--    NOTIFY each; one writer alone, no difference). Environments nobody watches pay only the
--    lookup below. A process upserts its row before its first read in an environment, refreshes
--    `expires_at` while it has subscribers there, and deletes it when they are gone; rows of a
--    process that died are deleted by the others once expired (a leftover row costs NOTIFYs,
--    never correctness: the table is never the only way a subscriber learns of a change).
CREATE TABLE realtime_watches (
  environment_id text NOT NULL,
  watcher text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (environment_id, watcher)
);

-- The trigger functions' current text lives in sql/functions/ (svc_run_changed.sql,
-- svc_runs_inserted.sql); these first versions let the triggers be created here.
CREATE FUNCTION svc_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END;
$$;
CREATE FUNCTION svc_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN NULL;
END;
$$;

-- Payload is left out: it never changes after the insert (and comparing a large one would detoast
-- it). updated_at is left out: every update moves it. Status comes first: most updates that
-- matter change it, and OR stops at the first difference.
CREATE TRIGGER runs_changed BEFORE UPDATE OF status, metadata, tags, error, started_at, finished_at, delay_until, expired_at, ttl, idempotency_key, idempotency_key_user, is_test, output, output_type ON runs
  FOR EACH ROW WHEN ((OLD.status, OLD.metadata, OLD.tags, OLD.error, OLD.started_at, OLD.finished_at, OLD.delay_until, OLD.expired_at, OLD.ttl, OLD.idempotency_key, OLD.idempotency_key_user, OLD.is_test, OLD.output_type, OLD.output)
    IS DISTINCT FROM (NEW.status, NEW.metadata, NEW.tags, NEW.error, NEW.started_at, NEW.finished_at, NEW.delay_until, NEW.expired_at, NEW.ttl, NEW.idempotency_key, NEW.idempotency_key_user, NEW.is_test, NEW.output_type, NEW.output))
  EXECUTE FUNCTION svc_run_changed();
-- One call per INSERT statement (a batch of 500 runs is one), not one per row.
CREATE TRIGGER runs_inserted AFTER INSERT ON runs REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION svc_runs_inserted();
