-- API replicas cache which environment a secret key opens (one round trip less per request).
-- Any change to a key (rotation ending its validity, deletion) or to an environment NOTIFYs
-- `svc_credentials`, whatever code or operator made it; every replica LISTENs and drops its cache.
CREATE FUNCTION svc_notify_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_credentials', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;
CREATE TRIGGER secret_keys_changed AFTER UPDATE OR DELETE OR TRUNCATE ON secret_keys
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_credentials_changed();
CREATE TRIGGER environments_changed AFTER UPDATE OR DELETE OR TRUNCATE ON environments
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_credentials_changed();
