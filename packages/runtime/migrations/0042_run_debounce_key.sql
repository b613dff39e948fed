-- Debounced triggers (options.debounce, engine/runs/debounce.ts). `debounce_key` is the key a
-- debounced run was created with; while the run is DELAYED it is the run later triggers with the
-- same key push back (and, in trailing mode, update) instead of creating another. At most one
-- pending run holds a key per environment and task: a run that leaves DELAYED leaves the index by
-- itself, and a run whose window closed (maxDelay) has its key cleared before the next one takes it.
ALTER TABLE runs ADD COLUMN debounce_key text;
CREATE UNIQUE INDEX runs_pending_debounce_key ON runs (environment_id, task_identifier, debounce_key)
  WHERE debounce_key IS NOT NULL AND status = 'DELAYED';
