-- Cron schedules, one row per environment. IMPERATIVE schedules are created through the API;
-- DECLARATIVE ones come from `schedules.task({ cron })` and are synced when a worker starts.
-- A schedule fires while active: next_run_at is the next tick, advanced in the same transaction
-- that triggers the tick's run (engine/schedules/fire-due-schedules.ts).
CREATE TABLE schedules (
  id                text PRIMARY KEY,                -- sched_…
  environment_id    text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  type              text NOT NULL CHECK (type IN ('IMPERATIVE', 'DECLARATIVE')),
  task_identifier   text NOT NULL,
  cron              text NOT NULL,                   -- 5 fields, normalised (single spaces)
  timezone          text NOT NULL DEFAULT 'UTC',     -- IANA name the cron is evaluated in
  deduplication_key text,                            -- only when the user gave one; `{id}` may be it
  external_id       text,
  active            boolean NOT NULL DEFAULT true,
  next_run_at       timestamptz NOT NULL,            -- the next tick to fire
  last_tick_at      timestamptz,                     -- the last tick fired (payload.lastTimestamp)
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CHECK (type = 'IMPERATIVE' OR deduplication_key IS NULL)
);
CREATE UNIQUE INDEX schedules_deduplication ON schedules (environment_id, deduplication_key) WHERE deduplication_key IS NOT NULL;
CREATE UNIQUE INDEX schedules_declarative ON schedules (environment_id, task_identifier) WHERE type = 'DECLARATIVE';
CREATE INDEX schedules_list ON schedules (environment_id, created_at DESC, id DESC);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE active;

-- One row per tick fired. The primary key makes a second run for the same tick impossible, even
-- if two processes ever got past the row lock (clock skew, a bug): the loser inserts nothing.
CREATE TABLE schedule_ticks (
  schedule_id text NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  tick_at     timestamptz NOT NULL,
  run_id      text,
  fired_at    timestamptz NOT NULL,
  PRIMARY KEY (schedule_id, tick_at)
);
