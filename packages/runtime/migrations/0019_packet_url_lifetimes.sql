-- Packet upload URLs are single-use and expire: `upload_expires_at` is set by each presign,
-- `uploaded_at` by the upload that used the token (a new presign clears it). Download URLs carry
-- their own expiry, signed; they need no column.
ALTER TABLE packets
  ADD COLUMN upload_expires_at timestamptz NOT NULL DEFAULT now() + interval '1 hour',
  ADD COLUMN uploaded_at timestamptz;
ALTER TABLE packets ALTER COLUMN upload_expires_at DROP DEFAULT;
UPDATE packets SET uploaded_at = created_at WHERE data IS NOT NULL;
