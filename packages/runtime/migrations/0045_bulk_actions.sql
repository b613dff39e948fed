-- Bulk actions: cancel or replay many runs of one environment, chosen by a run list filter or by
-- id (docs/bulk-actions.md). The API inserts the row; the workers' timer loops work through it a
-- chunk per transaction (engine/bulk-actions/process-chunk.ts), and each chunk's transaction
-- holds this row FOR UPDATE, applies its effects and moves the cursor past the chunk together:
-- a crash rolls all three back, so no chunk is applied twice or skipped, and two processes never
-- work on one action at once.
--
-- `filters`: the run list filters fixed at creation (engine/runs/list.ts RunListFilters, dates as
-- ISO text; `createdTo` never later than the creation, so runs made afterwards, the replays
-- among them, are not in the set). `run_ids`: the explicit ids instead, sorted. The cursor is the
-- last run handled: (cursor_created_at, cursor_run_id) for a filter, walked in the run list's
-- (created_at DESC, id DESC) order; cursor_run_id alone for ids, walked in ascending order.
CREATE TABLE bulk_actions (
  id text PRIMARY KEY,
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  name text,
  action text NOT NULL CHECK (action IN ('CANCEL', 'REPLAY')),
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'COMPLETED', 'ABORTED')),
  filters jsonb,
  run_ids text[],
  cursor_created_at timestamptz,
  cursor_run_id text,
  total integer NOT NULL,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  completed_at timestamptz,
  CHECK ((filters IS NULL) <> (run_ids IS NULL))
);

-- GET /api/v1/bulk-actions: an environment's actions, newest first, keyset-paginated.
CREATE INDEX bulk_actions_list ON bulk_actions (environment_id, created_at DESC, id DESC);

-- The processors' claim: the pending action whose last chunk is oldest (round robin).
CREATE INDEX bulk_actions_pending ON bulk_actions (updated_at) WHERE status = 'PENDING';
