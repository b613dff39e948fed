-- One-time-use public tokens (a JWT with `otu: true`, what auth.createTriggerPublicToken makes by
-- default): the run or batch it created records the token's SHA-256, and a unique index refuses a
-- second use in the same statement that would create the second run or batch.
ALTER TABLE runs ADD COLUMN one_time_use_token text;
CREATE UNIQUE INDEX runs_one_time_use_token ON runs (one_time_use_token) WHERE one_time_use_token IS NOT NULL;
ALTER TABLE batches ADD COLUMN one_time_use_token text;
CREATE UNIQUE INDEX batches_one_time_use_token ON batches (one_time_use_token) WHERE one_time_use_token IS NOT NULL;
