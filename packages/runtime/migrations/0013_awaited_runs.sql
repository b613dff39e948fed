-- A run that someone waits on although it was not triggered to be waited on: triggerAndWait whose
-- idempotency key hands back a run another trigger made. Whoever attaches sets this with an UPDATE
-- of the run's row, so the attach and the run's ending are serialised by the row lock: either the
-- mark lands first and the ending (which leaves marked runs out of the worker's shared finish
-- statement) wakes the waiter, or the run is already final and the waiter takes its outcome at once.
ALTER TABLE runs ADD COLUMN awaited boolean NOT NULL DEFAULT false;
