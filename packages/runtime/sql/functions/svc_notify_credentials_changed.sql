-- Trigger function: any change to a secret key (rotation ending its validity, deletion) or to an
-- environment NOTIFYs `svc_credentials`, whatever code or operator made it; every API replica
-- LISTENs and drops its cache of which environment a key opens. The triggers are in
-- migrations/0011_credential_change_notices.sql.
CREATE OR REPLACE FUNCTION svc_notify_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_credentials', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;
