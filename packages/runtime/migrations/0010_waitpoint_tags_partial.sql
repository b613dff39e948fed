-- Most tokens have no tags, and every completion rewrites the waitpoint's index entries: only
-- waitpoints with tags are in the GIN index (tag filters say `tags <> '{}'`).
DROP INDEX waitpoints_tags;
CREATE INDEX waitpoints_tags ON waitpoints USING gin (tags) WHERE tags <> '{}';
