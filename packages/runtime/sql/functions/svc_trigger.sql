-- Triggers a run inside the caller's transaction: from any client (`SELECT * FROM svc_trigger(…)`,
-- the client's `tasks.trigger(…, { tx })`) or a database trigger. The run exists if and only if that
-- transaction commits; it is inserted QUEUED or DELAYED (svc_trigger_run) and the NOTIFY that wakes
-- workers (svc_runs_ready, which every worker of the environment hears, or svc_timers for a delayed
-- run) is delivered at commit, so that no worker hears of it before, and no lease runs while the
-- caller's transaction is open. A rollback (or ROLLBACK TO SAVEPOINT) takes the run and the NOTIFY
-- back. `p_environment`: see svc_trigger_environment. Returns the run's id, and whether an
-- idempotency key answered with an existing run. docs/trigger-in-transaction.md.
--
-- Why the environment's channel and not the chosen workers' own (engine/runs/wake-workers.ts): a
-- choice made now is delivered at commit, which may be long after, to workers that may be gone by
-- then; and choosing takes each candidate's listener lock shared, which the caller's transaction
-- would hold until it ends. Every worker of the environment hears svc_runs_ready at commit and
-- claims what it can (one wins each run); a trigger over HTTP, whose transaction is short, keeps
-- the targeted wake-up.
CREATE OR REPLACE FUNCTION svc_trigger(p_environment text, p_task text, p_payload jsonb DEFAULT NULL, p_options jsonb DEFAULT NULL)
RETURNS TABLE (run_id text, is_cached boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_env record;
  v_run record;
BEGIN
  SELECT * INTO v_env FROM svc_trigger_environment(p_environment);
  SELECT * INTO v_run FROM svc_trigger_run(v_env.environment_id, v_env.project_id, p_task, p_payload, p_options, NULL, NULL, clock_timestamp());
  IF NOT v_run.is_cached THEN
    IF v_run.run_status = 'QUEUED' THEN PERFORM pg_notify('svc_runs_ready', v_env.environment_id);
    ELSE PERFORM pg_notify('svc_timers', '');
    END IF;
  END IF;
  RETURN QUERY SELECT v_run.run_id, v_run.is_cached;
END;
$$;
