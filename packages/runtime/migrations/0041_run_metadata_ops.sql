-- Run metadata from task code (metadata.set/append/increment…, packages/runtime/src/ledger/run-metadata.ts).
-- An execution numbers the metadata operations its code makes, in call order: a replay of the
-- code after a wait makes the same calls with the same numbers. `metadata_ops` is how many of the
-- operations of ledger epoch `metadata_ops_epoch` the stored metadata already has: a flush applies
-- only those numbered from there on, so an `increment` or `append` before a wait is applied once
-- however often the code before the wait runs again. A retry after a failure (a new ledger epoch)
-- runs the code again and applies its operations again, as Trigger.dev does. Null: none applied.
-- Not in the realtime trigger's columns: a subscriber sees `metadata`, which changes with them.
ALTER TABLE runs ADD COLUMN metadata_ops_epoch integer, ADD COLUMN metadata_ops integer;
