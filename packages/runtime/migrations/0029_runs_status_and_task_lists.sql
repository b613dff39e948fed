-- The run list filtered by status or task over a long history. Without an index of their own,
-- these filters walk runs_list (environment, created_at) and test each row: a status or task that
-- few runs of the window have reads the whole window for one page (10,000,000 runs of history,
-- 7-day window: 3.4 s for a status no run of the week has, 0.1–0.2 s for a rare one; bench/README.md).
--
-- An index holding `status` would make every transition (claim, suspend, resume, finish) write a
-- new entry into every index of runs, where today most of them are HOT updates. A run's final
-- status is set once and never changes, so it gets a column of its own, NULL while the run is live,
-- derived from `status` by Postgres so that no transition can forget it. Only the update that
-- finishes a run changes it (that update is no longer HOT); the others stay HOT. Live runs are the
-- NULL entries, so a filter on a live status (QUEUED, WAITING …) walks the live runs alone.
--
-- task_identifier never changes after the insert, so its index costs one entry per run and keeps
-- every update HOT.
--
-- Adding a stored generated column rewrites runs once (ACCESS EXCLUSIVE for the rewrite and the
-- two index builds: see docs/deployment.md, upgrading).
ALTER TABLE runs ADD COLUMN final_status text GENERATED ALWAYS AS (
  CASE WHEN status IN ('COMPLETED', 'CANCELED', 'FAILED', 'CRASHED', 'SYSTEM_FAILURE', 'EXPIRED', 'TIMED_OUT') THEN status END
) STORED;
CREATE INDEX runs_status_list ON runs (environment_id, final_status, created_at DESC, id DESC);
CREATE INDEX runs_task_list ON runs (environment_id, task_identifier, created_at DESC, id DESC);
