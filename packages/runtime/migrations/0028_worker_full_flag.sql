-- Resume offers know which workers have a free slot. A worker writes `full_since` (its own clock)
-- when its last free slot is taken, and clears it when one is free again: transitions only, not a
-- write per run (a worker that never fills up never writes it). svc_complete_waitpoint offers a run
-- to a worker whose `full_since` is NULL whenever one is live, preferring the one that suspended
-- the run among them; only when every live worker of the task is full does it fall back to the
-- suspending worker, else any (which gives the run back when it is still full).
--
-- NULL also for rows of workers started before this migration: they are taken to have a slot, as
-- every worker was before.
ALTER TABLE workers ADD COLUMN full_since timestamptz;
