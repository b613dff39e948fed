-- Triggers a run inside the caller's transaction: from any client (`SELECT * FROM svc_trigger(…)`,
-- the client's `tasks.trigger(…, { tx })`) or a database trigger. The run exists if and only if that
-- transaction commits; it is inserted QUEUED or DELAYED (svc_trigger_run) and the NOTIFY that starts
-- it is delivered at commit, so that no worker hears of it before, and no lease runs while the
-- caller's transaction is open: a run that can start at once is offered at COMMIT to one live worker
-- with a free slot, claimed for it (svc_offer_at_commit), else every worker of the environment hears
-- svc_runs_ready; a delayed run, svc_timers. A rollback (or ROLLBACK TO SAVEPOINT) takes the run and
-- the NOTIFY back. `p_environment`: see svc_trigger_environment. Returns the run's id, and whether an
-- idempotency key answered with an existing run. docs/trigger-in-transaction.md.
--
-- Why the choice of worker waits for COMMIT: a choice made now would be delivered at commit, which
-- may be long after, to a worker that may be gone or full by then, holding a lease that ran while
-- the caller's transaction was open; and choosing takes each candidate's listener lock shared,
-- which the caller's transaction would hold until it ends. At COMMIT none of that holds.
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
    IF v_run.run_status <> 'QUEUED' THEN PERFORM pg_notify('svc_timers', '');
    -- A run marked offer_at_commit is offered, or the workers woken, at COMMIT (svc_offer_at_commit).
    ELSIF NOT (SELECT r.offer_at_commit FROM runs r WHERE r.id = v_run.run_id) THEN PERFORM pg_notify('svc_runs_ready', v_env.environment_id);
    END IF;
  END IF;
  RETURN QUERY SELECT v_run.run_id, v_run.is_cached;
END;
$$;
