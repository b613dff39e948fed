-- Rate limits (docs/rate-limits.md): at most `limit` starts of a queue's runs in any window of
-- `period`, per rate key, enforced by the limited queue's claim (CLAIM_LIMITED_SQL,
-- engine/runs/rate-limit-sql.ts).
--
-- worker_tasks: the rate limit a task declared for its queue, as its worker registered it (both
-- NULL: none). A queue with one is limited (svc_queue_is_limited): its runs are never offered at
-- trigger and never taken by the plain claim.
ALTER TABLE worker_tasks ADD COLUMN rate_limit integer, ADD COLUMN rate_period_ms integer,
  ADD CONSTRAINT worker_tasks_rate_limit_check CHECK (
    (rate_limit IS NULL) = (rate_period_ms IS NULL) AND (rate_limit IS NULL OR (rate_limit > 0 AND rate_period_ms > 0)));

-- The run's rate key (its trigger's `rateLimit.key`): each key of a queue has its own copy of the
-- limit; runs without one share one.
ALTER TABLE runs ADD COLUMN rate_limit_key text;

-- When a claim first left the run QUEUED for its rate (it counts it once: svc_runs_rate_delayed_total).
ALTER TABLE runs ADD COLUMN rate_delayed_at timestamptz;

-- The starts each (queue, rate key) made in its last period, a sliding log: `started_at[i]` is a
-- claim's time, rounded up to the next 1/100 of the period, and `started_n[i]` how many runs
-- claims started then, oldest first (at most about 100 entries, whatever the limit). Written only
-- by the queue's claim, under the queue's lock, which drops the entries older than the period.
CREATE TABLE rate_limit_windows (
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  queue_name text NOT NULL,
  rate_key text NOT NULL,
  started_at timestamptz[] NOT NULL,
  started_n integer[] NOT NULL,
  PRIMARY KEY (environment_id, queue_name, rate_key)
);
