-- Plain QUEUED runs are claimed by workers straight from `runs` (engine/runs/transitions/claim-queued.ts),
-- with no pg-boss job. Which runs: decided when the run is inserted and kept in `claim_from_runs`,
-- true for a run without a concurrency key whose queue has no concurrencyLimit then (a limit is
-- counted by the queue's pg-boss fetch, so such runs keep their start jobs). A queue that gets a
-- limit later has its queued runs moved onto jobs when the worker declaring it registers
-- (register-tasks.ts). Runs made before this migration have jobs: false.
ALTER TABLE runs ADD COLUMN claim_from_runs boolean NOT NULL DEFAULT false;

-- Only the runs such a claim can take, oldest first per environment: a claim reads its batch,
-- whatever the history holds. Runs leave it when they are claimed (their new row version is not
-- QUEUED). Built in the migration's transaction: on a large history it takes a pass over `runs`,
-- holding writes to `runs` meanwhile (docs/migrations.md, "Upgrades that take a while").
CREATE INDEX runs_queued ON runs (environment_id, created_at, id)
  WHERE status = 'QUEUED' AND available_at IS NULL AND claim_from_runs;
