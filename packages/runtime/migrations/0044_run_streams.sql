-- Realtime streams and input streams of a run (Trigger.dev v4's `streams.pipe/append` and
-- `streams.input`; packages/runtime/src/engine/streams). A run's stream is an append-only list of
-- chunks, each the JSON text of one value, numbered 1, 2, … per stream: `out` streams are what the
-- run sends to its subscribers (`/realtime/v1/streams/{run}/{key}`), `in` streams what clients
-- send to the run (`streams.input().send`), read by the run's `.wait()`, `.once()` and `.on()`.
-- Everything goes with the run (the foreign keys' cascade: retention deletes runs).

-- The output stream keys of a run, as realtime subscribers see them (the shape's `realtimeStreams`:
-- `withStreams()` and useRealtimeRunWithStreams subscribe to each). NULL: none. Added without a
-- default, so existing rows are not rewritten.
ALTER TABLE runs ADD COLUMN realtime_streams text[];

DROP TRIGGER runs_changed ON runs;
CREATE TRIGGER runs_changed BEFORE UPDATE OF status, metadata, tags, error, started_at, finished_at, delay_until, expired_at, ttl, idempotency_key, idempotency_key_user, is_test, output, output_type, realtime_streams ON runs
  FOR EACH ROW WHEN ((OLD.status, OLD.metadata, OLD.tags, OLD.error, OLD.started_at, OLD.finished_at, OLD.delay_until, OLD.expired_at, OLD.ttl, OLD.idempotency_key, OLD.idempotency_key_user, OLD.is_test, OLD.output_type, OLD.output, OLD.realtime_streams)
    IS DISTINCT FROM (NEW.status, NEW.metadata, NEW.tags, NEW.error, NEW.started_at, NEW.finished_at, NEW.delay_until, NEW.expired_at, NEW.ttl, NEW.idempotency_key, NEW.idempotency_key_user, NEW.is_test, NEW.output_type, NEW.output, NEW.realtime_streams))
  EXECUTE FUNCTION svc_run_changed();

-- One row per stream: `last_seq` is its last chunk's number (0: none yet). An append takes the
-- row's lock to number its chunks, so the chunks of one stream commit in sequence order.
CREATE TABLE run_streams (
  environment_id text NOT NULL,
  run_id         text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  io             text NOT NULL CHECK (io IN ('out', 'in')),
  stream_key     text NOT NULL,
  last_seq       bigint NOT NULL DEFAULT 0,
  created_at     timestamptz NOT NULL,
  PRIMARY KEY (run_id, io, stream_key)
);

-- The chunks. `part_id` makes an append idempotent (a writer's retry, a replay of the run's code).
CREATE TABLE run_stream_records (
  environment_id text NOT NULL,
  run_id         text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  io             text NOT NULL,
  stream_key     text NOT NULL,
  seq            bigint NOT NULL,
  part_id        text NOT NULL,
  data           text NOT NULL,
  created_at     timestamptz NOT NULL,
  PRIMARY KEY (run_id, io, stream_key, seq)
);
CREATE UNIQUE INDEX run_stream_records_part ON run_stream_records (run_id, io, stream_key, part_id);

-- A run waiting in `streams.input(…).wait()`: a MANUAL waitpoint the next chunk sent to the input
-- stream after `after_seq` completes (with `{ seq, data }`), or that times out like any token.
CREATE TABLE run_input_waits (
  waitpoint_id   text PRIMARY KEY REFERENCES waitpoints(id) ON DELETE CASCADE,
  environment_id text NOT NULL,
  run_id         text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  stream_key     text NOT NULL,
  after_seq      bigint NOT NULL
);
CREATE INDEX run_input_waits_stream ON run_input_waits (run_id, stream_key, after_seq);
