-- Claiming and finishing a run should be HOT updates (no new index entries, GIN tags included).
-- That needs room on the page and no index that mentions a column those updates change: the
-- partial indexes no longer test `status`; each keys on its own column, which the engine sets to
-- NULL once it no longer applies (delay passed, run started, retry enqueued, lease released).
ALTER TABLE runs SET (fillfactor = 80);
DROP INDEX runs_delayed;
CREATE INDEX runs_delayed ON runs (delay_until) WHERE delay_until IS NOT NULL;
DROP INDEX runs_expiring;
CREATE INDEX runs_expiring ON runs (expire_at) WHERE expire_at IS NOT NULL;
DROP INDEX runs_retrying;
CREATE INDEX runs_retrying ON runs (available_at) WHERE available_at IS NOT NULL;
DROP INDEX runs_lease;
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE lease_expires_at IS NOT NULL;

-- Most runs have no tags: only runs with tags are in the GIN index (tag filters say `tags <> '{}'`).
DROP INDEX runs_tags;
CREATE INDEX runs_tags ON runs USING gin (tags) WHERE tags <> '{}';
