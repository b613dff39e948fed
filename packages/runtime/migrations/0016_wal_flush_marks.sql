-- A commit made with synchronous_commit off is visible (and its NOTIFYs delivered) before its WAL
-- is on disk. To wait until it is durable, a later transaction commits synchronously: that flushes
-- the WAL up to its own commit record, which covers every record before it. Postgres only waits
-- for a transaction that wrote WAL, so the flushing transaction bumps a counter here: one row per
-- slot (the backend pid modulo 1024), so concurrent flushes rarely share a row.
CREATE TABLE wal_flush_marks (
  slot integer PRIMARY KEY,
  flushes bigint NOT NULL DEFAULT 1
);
