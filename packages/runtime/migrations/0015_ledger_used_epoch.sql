-- Keyed waits (epoch -1) outlive attempts, and their idempotencyKeyTTL decides whether a later
-- attempt may pass one by its key. A replay of the attempt that recorded or passed the wait must
-- take the same path whatever the clock says meanwhile: used_epoch is the last attempt epoch that
-- recorded the entry or passed it by its key, and the TTL does not apply within that epoch.
ALTER TABLE run_ledger ADD COLUMN used_epoch integer;
