-- The runs a bulk action touched, for the run list's filter[bulkAction] (Trigger.dev's
-- bulkActionGroupIds): a cancel's runs of its set that it reached (canceled, or already finished),
-- a replay's new runs. Written by the chunk's transaction that touched them
-- (engine/bulk-actions/process-chunk.ts), with the run's created_at, so that the list reads one
-- lane per action in (created_at, run_id) order and stops after a page, as it reads run_tags
-- (migration 0032). Deleted with the run (retention: the foreign key's cascade, by
-- bulk_action_runs_run) or with the action (retention, or its environment's deletion: the cascade
-- by (environment_id, bulk_action_id), the primary key's prefix, so it reads only the action's
-- rows; bulk_actions gets the unique key the foreign key needs).
ALTER TABLE bulk_actions ADD CONSTRAINT bulk_actions_environment_id_id_key UNIQUE (environment_id, id);
CREATE TABLE bulk_action_runs (
  environment_id text NOT NULL,
  bulk_action_id text NOT NULL,
  created_at timestamptz NOT NULL,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  PRIMARY KEY (environment_id, bulk_action_id, created_at, run_id),
  FOREIGN KEY (environment_id, bulk_action_id) REFERENCES bulk_actions(environment_id, id) ON DELETE CASCADE
);
CREATE INDEX bulk_action_runs_run ON bulk_action_runs (run_id);
