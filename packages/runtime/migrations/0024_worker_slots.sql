-- What the dashboard shows of each live worker, beside its tasks and version: how many runs it may
-- execute at once (`slots`, its concurrency), how many it executes now (`slots_in_use`), when it
-- started and when it last renewed its row (`heartbeat_at`). Written by the worker with its own
-- clock: the counts and the heartbeat ride on the renewal it already makes every leaseMs / 3, so
-- they cost no statement of their own. Nullable (or defaulted) so that rows of workers started
-- before this migration stay valid until they renew or re-register.
ALTER TABLE workers
  ADD COLUMN slots        integer,
  ADD COLUMN slots_in_use integer NOT NULL DEFAULT 0,
  ADD COLUMN started_at   timestamptz,
  ADD COLUMN heartbeat_at timestamptz;
