-- A trigger's own rate (docs/rate-limits.md, issue 35 §3): `rateLimit: { key?, limit, period }` when
-- triggering bounds that run's start as a declared rate does: it starts only while its key's starts
-- in the last `period` number fewer than `limit`. A queue's declared rate still holds for it (a
-- trigger tightens, never lifts, what the task's author declared).
--
-- runs: the run's own bound (both NULL: none). A run with one is always its queue's limited claim's
-- (claim_from_runs false), as a run holding a named limit is. NOT VALID: every existing row has two
-- NULLs, and validating would read the whole table under its lock; new rows are checked.
ALTER TABLE runs ADD COLUMN rate_limit integer, ADD COLUMN rate_period_ms integer;
ALTER TABLE runs ADD CONSTRAINT runs_rate_limit_check CHECK (
  (rate_limit IS NULL) = (rate_period_ms IS NULL) AND (rate_limit IS NULL OR (rate_limit > 0 AND rate_period_ms > 0))) NOT VALID;

-- What a worker reads to learn which of its queues have runs with their own rate
-- (queuesWithOwnRateRuns): it claims them with the queue's rate-limited claim.
CREATE INDEX runs_own_rate_live ON runs (environment_id, queue_name)
  WHERE rate_limit IS NOT NULL AND list_status = 'LIVE';

-- rate_limit_windows: one log per (queue, rate key, period) where there was one per (queue, rate
-- key). Each keeps the starts of its own period at its own step (1/100 of it), so a key whose runs
-- bound it by 1 s and by 1 h keeps ~100 entries for each, not an hour of 10 ms steps. A claim records
-- a start in every log of its key. An existing log is its queue's declared rate's, the one the
-- claim counted (rateCte's choice); a log of a queue no worker declares a rate for any more counts
-- nothing and goes.
ALTER TABLE rate_limit_windows ADD COLUMN period_ms integer;
UPDATE rate_limit_windows w SET period_ms = d.ms FROM (
  SELECT DISTINCT ON (wt.environment_id, wt.queue_name) wt.environment_id, wt.queue_name, wt.rate_period_ms AS ms
  FROM worker_tasks wt WHERE wt.rate_limit IS NOT NULL
  ORDER BY wt.environment_id, wt.queue_name, wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC) d
WHERE w.environment_id = d.environment_id AND w.queue_name = d.queue_name;
DELETE FROM rate_limit_windows WHERE period_ms IS NULL;
ALTER TABLE rate_limit_windows ALTER COLUMN period_ms SET NOT NULL,
  ADD CONSTRAINT rate_limit_windows_period_check CHECK (period_ms > 0),
  DROP CONSTRAINT rate_limit_windows_pkey,
  ADD PRIMARY KEY (environment_id, queue_name, rate_key, period_ms);
