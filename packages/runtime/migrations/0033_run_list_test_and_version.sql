-- The run list's last two filters that walked the window: isTest and version (10,000,000 runs of
-- history, 7-day window: seconds for a value few runs of the week have).
--
-- Test runs are few (runs triggered from the dashboard's test page): a partial index holds only
-- them, so `filter[isTest]=true` reads them in the list's order and other runs cost nothing.
-- `isTest=false` reads runs_list and skips the few test runs it meets.
CREATE INDEX runs_test_list ON runs (environment_id, created_at DESC, id DESC) WHERE is_test;

-- A run's worker_version is written by its claims (a start, a resume, an offer), so an index on it
-- would make every claim write a new entry into every index of runs (no more HOT claims). Instead,
-- each version's latest claim time, coarsely: every claim that gives runs a version makes sure
-- `seen_until` is past the claim's time (a guarded update, written at most about twice a minute per
-- version). A claim names runs that exist, so no run of the version was created after
-- `seen_until`, and the list starts its walk there (plus a margin for clocks that differ between
-- processes): an older version's page is read where its runs are, a version of the past that left
-- the window answers at once. Workers enter their version here when they start, before any claim.
--
-- A version without a row has no runs: every build registers its tasks with its version in
-- worker_tasks when it starts, before it claims anything, and the trigger below enters the version
-- of a build that does not know this table (one before this, during a rolling upgrade) with
-- `infinity`: runs of such a version are read as before (the whole window), as are the versions
-- runs, registered tasks and live workers already have (the backfill: older builds may still claim
-- for them without writing here). A build that knows the table enters its version first, with a
-- real time, and the trigger leaves that row alone.
CREATE TABLE worker_versions (
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  version text NOT NULL,
  seen_until timestamptz NOT NULL,
  PRIMARY KEY (environment_id, version)
);
INSERT INTO worker_versions (environment_id, version, seen_until)
  SELECT environment_id, worker_version, 'infinity'::timestamptz FROM runs WHERE worker_version IS NOT NULL
  UNION SELECT environment_id, worker_version, 'infinity' FROM worker_tasks
  UNION SELECT environment_id, version, 'infinity' FROM workers;

CREATE FUNCTION svc_enter_worker_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO worker_versions (environment_id, version, seen_until) VALUES (NEW.environment_id, NEW.worker_version, 'infinity')
  ON CONFLICT (environment_id, version) DO NOTHING;
  RETURN NULL;
END;
$$;
CREATE TRIGGER worker_tasks_enter_version AFTER INSERT OR UPDATE OF worker_version ON worker_tasks
  FOR EACH ROW EXECUTE FUNCTION svc_enter_worker_version();
