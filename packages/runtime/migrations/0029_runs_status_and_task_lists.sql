-- The run list filtered by status or task over a long history. Without an index of their own,
-- these filters walk runs_list (environment, created_at) and test each row: a status or task that
-- few runs of the window have reads the whole window for one page (10,000,000 runs of history,
-- 7-day window: 3.4 s for a status no run of the week has, 0.1–0.2 s for a rare one; bench/README.md).
--
-- An index holding `status` would make every transition (claim, suspend, resume, finish) write a
-- new entry into every index of runs, where today most of them are HOT updates. So the index holds
-- `list_status`, which Postgres derives from `status` (no transition can forget it): 'LIVE' until
-- the run finishes, then its final status, never changed again. Only the update that finishes a
-- run changes it (that update is no longer HOT); the others stay HOT. A filter on a live status
-- (QUEUED, WAITING …) reads the environment's 'LIVE' entries, the runs not yet finished.
--
-- COMPLETED runs are left out of the index: they are most runs (~90 % in the benchmark's history),
-- so that filter finds its page in runs_list at once, and the index stays a tenth of the size.
--
-- task_identifier and queue_name never change after the insert: their indexes cost an entry per
-- run (the queue's, only for some runs) and keep every update HOT.
--
-- Adding a stored generated column rewrites runs once (ACCESS EXCLUSIVE for the rewrite and the
-- index builds, ~15 s per million runs: docs/migrations.md).
ALTER TABLE runs ADD COLUMN list_status text NOT NULL GENERATED ALWAYS AS (
  CASE WHEN status IN ('COMPLETED', 'CANCELED', 'FAILED', 'CRASHED', 'SYSTEM_FAILURE', 'EXPIRED', 'TIMED_OUT') THEN status ELSE 'LIVE' END
) STORED;
CREATE INDEX runs_status_list ON runs (environment_id, list_status, created_at DESC, id DESC) WHERE list_status <> 'COMPLETED';
CREATE INDEX runs_task_list ON runs (environment_id, task_identifier, created_at DESC, id DESC);
-- A task's runs are on its default queue `task/<id>` unless it names another (a shared queue, or a
-- queue given at trigger time): only those others are indexed here, so a run on its default queue
-- costs nothing. The list's queue filter reads this index for the others and runs_task_list for
-- the runs of task <id> on `task/<id>`.
CREATE INDEX runs_queue_list ON runs (environment_id, queue_name, created_at DESC, id DESC) WHERE queue_name <> 'task/' || task_identifier;
