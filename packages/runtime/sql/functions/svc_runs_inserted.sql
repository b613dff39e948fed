-- AFTER INSERT statement trigger on runs (migration 0038): the runs an INSERT made in watched
-- environments NOTIFY `svc_run_changes` as svc_run_changed does for an update (their change_xid
-- came from the column's default). One call per statement, whatever the number of runs; an
-- unwatched environment costs one lookup.
CREATE OR REPLACE FUNCTION svc_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_run_changes',
    CASE WHEN octet_length(n.notice) > 7900 THEN json_build_array(i.environment_id, i.id, i.batch_id, NULL)::text ELSE n.notice END)
  FROM inserted i
  CROSS JOIN LATERAL (SELECT json_build_array(i.environment_id, i.id, i.batch_id, i.tags)::text AS notice) n
  WHERE i.environment_id IN (SELECT w.environment_id FROM realtime_watches w);
  RETURN NULL;
END;
$$;
