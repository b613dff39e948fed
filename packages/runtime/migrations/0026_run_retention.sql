-- Retention (engine/retention): finished runs, and what hangs off them, are deleted once they are
-- older than their environment's retention period, by the workers' retention loop.

-- Days a finished run is kept; NULL: the parent environment's (preview branches), else the
-- worker's RUN_RETENTION_DAYS; 0: kept forever.
ALTER TABLE environments ADD COLUMN run_retention_days integer CHECK (run_retention_days >= 0);

-- One row per environment, written by the retention loop only: the next sweep is due at `due_at`,
-- and the worker that claims a sweep pushes `due_at` ahead (so others leave it alone) while it
-- works. `last_deleted`: what the last complete sweep deleted, per kind.
CREATE TABLE retention_sweeps (
  environment_id text PRIMARY KEY REFERENCES environments(id) ON DELETE CASCADE,
  due_at         timestamptz NOT NULL,
  swept_at       timestamptz,
  last_deleted   jsonb,
  deleted_runs   bigint NOT NULL DEFAULT 0
);

-- Deleting a waitpoint made Postgres look for ledger rows naming it (ON DELETE SET NULL) with a
-- scan of run_ledger per waitpoint: there is no index on waitpoint_id beyond the unresolved rows.
-- Like runs (0008) and run_attempts (0017), the ledger keeps no foreign key to waitpoints; the
-- engine writes ledger rows for waitpoints it has just made or locked (FOR SHARE), and a resolved
-- row keeps its outcome when its waitpoint is deleted (readers join waitpoints with LEFT JOIN).
-- A ledger insert no longer locks the waitpoint's row for its foreign key either.
ALTER TABLE run_ledger DROP CONSTRAINT run_ledger_waitpoint_id_fkey;

-- Completed and timed-out waitpoints by age, for the sweep. A completion is not a HOT update
-- already (status is in waitpoints_due's predicate), so this costs it one more index entry; a
-- waitpoint made WAITING gets none until it completes.
CREATE INDEX waitpoints_completed ON waitpoints (environment_id, completed_at, id) WHERE status <> 'WAITING';

-- Whether a run still names a stored payload packet (`payload` is the packet's path). Only runs with
-- stored payloads have entries, and payload never changes after the insert, so no update loses
-- HOT. md5: a path of 1,024 characters can exceed what a btree entry may hold.
CREATE INDEX runs_stored_payload ON runs (environment_id, md5(payload)) WHERE payload_type = 'application/store';

-- Uploaded packets by age, for the sweep (packets are written once per large payload: no hot path).
CREATE INDEX packets_created ON packets (environment_id, created_at, path) WHERE data IS NOT NULL;
