-- Items of a batch that an idempotency key answered with a run made by another trigger. Such a run
-- keeps its own batch_id (it may belong to another batch, or to none), so the batch records it here:
-- a batch's runs are its own (runs.batch_id) plus these, by index. A parent waiting on the batch
-- (batchTriggerAndWait) is resumed once all of them have ended.
CREATE TABLE batch_members (
  batch_id    text NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  batch_index integer NOT NULL,
  run_id      text NOT NULL,
  PRIMARY KEY (batch_id, batch_index)
);
CREATE INDEX batch_members_run ON batch_members (run_id);
