-- Waitpoints: what a run can wait on. MANUAL = a token completed by an API call or its callback
-- URL; DATETIME = wait.for / wait.until; RUN = a child run finishing; BATCH = a batch finishing.
CREATE TABLE waitpoints (
  id                 text PRIMARY KEY,           -- waitpoint_…
  environment_id     text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  type               text NOT NULL CHECK (type IN ('MANUAL', 'DATETIME', 'RUN', 'BATCH')),
  status             text NOT NULL CHECK (status IN ('WAITING', 'COMPLETED', 'TIMED_OUT')),
  idempotency_key    text,
  idempotency_key_user_provided boolean NOT NULL DEFAULT false,
  idempotency_key_expires_at timestamptz,
  inactive_idempotency_key text,
  timeout_at         timestamptz,                -- MANUAL: times out then; DATETIME: completes then
  completed_at       timestamptz,
  output             text,                       -- serialised, see output_type
  output_type        text,
  output_is_error    boolean NOT NULL DEFAULT false,
  tags               text[] NOT NULL DEFAULT '{}',
  completed_by_run_id text,
  completed_by_batch_id text,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX waitpoints_idempotency ON waitpoints (environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX waitpoints_list ON waitpoints (environment_id, created_at DESC, id DESC) WHERE type = 'MANUAL';
CREATE INDEX waitpoints_due ON waitpoints (timeout_at) WHERE status = 'WAITING' AND timeout_at IS NOT NULL;
CREATE INDEX waitpoints_tags ON waitpoints USING gin (tags);
CREATE INDEX waitpoints_child_run ON waitpoints (completed_by_run_id) WHERE completed_by_run_id IS NOT NULL;
CREATE INDEX waitpoints_batch ON waitpoints (completed_by_batch_id) WHERE completed_by_batch_id IS NOT NULL;

-- The idempotent-wait ledger: one row per durable step of a run, keyed deterministically by
-- (run, epoch, step key). A resumed run replays these rows instead of re-doing their work.
-- kind: token | datetime | child | batch | step. A waiting row has waitpoint_id and no outcome yet.
CREATE TABLE run_ledger (
  run_id        text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch         integer NOT NULL,
  step_key      text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('token', 'datetime', 'child', 'batch', 'step')),
  target        text,                            -- what the code asked for: a token id, a wake-up time …
  waitpoint_id  text REFERENCES waitpoints(id) ON DELETE SET NULL,
  resolved      boolean NOT NULL DEFAULT false,
  outcome       jsonb,                           -- { ok, output?, error? } or a step's result
  expires_at    timestamptz,                     -- keyed waits: the key's TTL
  created_at    timestamptz NOT NULL DEFAULT now(),
  resolved_at   timestamptz,
  PRIMARY KEY (run_id, epoch, step_key)
);
CREATE INDEX run_ledger_waiting ON run_ledger (waitpoint_id) WHERE NOT resolved;
