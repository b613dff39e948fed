-- Sessions: a long-lived conversation between clients and runs of one task, with two append-only
-- channels, `.in` (clients → runs) and `.out` (runs → clients). Status is derived, never stored:
-- CLOSED when closed_at is set, EXPIRED when expires_at has passed, else ACTIVE.
CREATE TABLE sessions (
  id               text PRIMARY KEY,             -- session_…
  environment_id   text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  external_id      text,                         -- the caller's key, unique per environment, immutable
  type             text NOT NULL,
  task_identifier  text NOT NULL,
  trigger_config   jsonb NOT NULL,
  current_run_id   text,                         -- the run that serves the session now (may have ended)
  tags             text[] NOT NULL DEFAULT '{}',
  metadata         jsonb,
  closed_at        timestamptz,
  closed_reason    text,
  expires_at       timestamptz,
  -- The last record's sequence number of each channel (0: none yet). An append takes the row's
  -- lock to take the next number, so appends to one session commit in sequence order.
  in_seq           bigint NOT NULL DEFAULT 0,
  out_seq          bigint NOT NULL DEFAULT 0,
  -- The highest `.in` sequence number handed to a run's wait: a run the session starts next reads
  -- from there, so a record no run has received is not skipped.
  in_delivered     bigint NOT NULL DEFAULT 0,
  -- `.out` records below this sequence number are gone (trimTo).
  out_trimmed_below bigint NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
) WITH (fillfactor = 80);
CREATE UNIQUE INDEX sessions_external_id ON sessions (environment_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX sessions_list ON sessions (environment_id, created_at DESC, id DESC);
CREATE INDEX sessions_tags ON sessions USING gin (tags);

-- The records of both channels. `data` is the record's JSON value as text (NULL for a control
-- record, whose meaning is in its headers); `part_id` makes an append idempotent.
CREATE TABLE session_records (
  session_id  text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  io          text NOT NULL CHECK (io IN ('in', 'out')),
  seq         bigint NOT NULL,
  part_id     text NOT NULL,
  data        text,
  headers     jsonb,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (session_id, io, seq)
);
CREATE UNIQUE INDEX session_records_part ON session_records (session_id, io, part_id);

-- The runs a session started, and why: its first run (create), a run an `.in` append started
-- because none was alive (append), a hand-over (continue). `start_after` is the `.in` sequence
-- number the run's first wait reads after.
CREATE TABLE session_runs (
  session_id   text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  run_id       text NOT NULL,
  reason       text NOT NULL CHECK (reason IN ('create', 'append', 'continue')),
  start_after  bigint NOT NULL,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (session_id, run_id)
);
CREATE INDEX session_runs_run ON session_runs (run_id);
CREATE INDEX session_runs_list ON session_runs (session_id, created_at DESC, run_id DESC);

-- A run waiting on a channel (`session.in.wait()`): a SESSION waitpoint, completed by the next
-- append after `after_seq` with that record as its output, or timed out like any waitpoint.
-- `out_appended`: how many `.out` records the run's attempt had appended to the session when it
-- waited (their part ids are `<run>:<epoch>:<n>` for n below it); the completion records it in
-- the ledger, so a replay of the run skips those appends without asking the database.
ALTER TABLE waitpoints DROP CONSTRAINT waitpoints_type_check;
ALTER TABLE waitpoints ADD CONSTRAINT waitpoints_type_check CHECK (type IN ('MANUAL', 'DATETIME', 'RUN', 'BATCH', 'SESSION'));
CREATE TABLE session_waits (
  waitpoint_id text PRIMARY KEY REFERENCES waitpoints(id) ON DELETE CASCADE,
  session_id   text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  io           text NOT NULL CHECK (io IN ('in', 'out')),
  after_seq    bigint NOT NULL,
  out_appended integer
);
CREATE INDEX session_waits_channel ON session_waits (session_id, io, after_seq);

ALTER TABLE run_ledger DROP CONSTRAINT run_ledger_kind_check;
ALTER TABLE run_ledger ADD CONSTRAINT run_ledger_kind_check CHECK (kind IN ('token', 'datetime', 'child', 'batch', 'step', 'session'));
