-- The plain claim (CLAIM_READY_SQL, engine/runs/transitions/claim-ready.ts) takes the oldest ready
-- runs of the worker's tasks. Its two indexes ordered the environment's ready runs by age alone, so
-- a claim read, run row by run row, every older ready run of a task the worker does not serve: a
-- task with a backlog and no worker (its workers down, or a deployment without it) made every
-- other task's claim fetch that backlog from the heap, every time. With the task as the indexes'
-- last key column the claim checks it in the index entry and fetches only its own tasks' runs; the
-- order is unchanged.
-- Built in the migration's transaction: each is a pass over `runs` (docs/migrations.md).
DROP INDEX runs_queued;
CREATE INDEX runs_queued ON runs (environment_id, created_at, id, task_identifier)
  WHERE status = 'QUEUED' AND available_at IS NULL AND claim_from_runs;
DROP INDEX runs_resumable;
CREATE INDEX runs_resumable ON runs (environment_id, resume_due_at, id, task_identifier)
  WHERE status = 'WAITING' AND resume_due_at IS NOT NULL AND claim_from_runs;
