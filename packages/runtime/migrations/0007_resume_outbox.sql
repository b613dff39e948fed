-- A resolved wait's resume is recorded on the run itself, in the transaction that completed the
-- waitpoint: resume_due_at. Workers take the run at once through the NOTIFY fast path (their claim
-- clears it); a resume still due at resume_due_at (nobody listening, no free slot, a lost NOTIFY)
-- is handed to pg-boss as a resume job by the worker's timer loop. Runs of a queue with a
-- concurrencyLimit are due at once: they resume through their queue, where pg-boss counts them.
ALTER TABLE runs ADD COLUMN resume_due_at timestamptz;
CREATE INDEX runs_resume_due ON runs (resume_due_at) WHERE resume_due_at IS NOT NULL;

-- Completes (or times out) a waitpoint, first writer wins, in one round trip.
--
-- Two statements on purpose: the guarded UPDATE of the waitpoint waits behind a waiter that holds
-- it FOR SHARE while it records its wait; the ledger UPDATE then runs with a fresh snapshot (a
-- VOLATILE function takes one per statement under READ COMMITTED) and sees the row that waiter
-- committed. The NOTIFYs are delivered at COMMIT: runs resume if and only if the caller commits.
--
-- Returns whether this call changed the waitpoint, the runs it resumes, and the waitpoint as it
-- now is (all NULL when there is no such waitpoint).
CREATE FUNCTION svc_complete_waitpoint(
  p_id text,
  p_status text,
  p_now timestamptz,
  p_output text,
  p_output_type text,
  p_output_is_error boolean,
  p_environment_id text,      -- NULL: any environment
  p_type text,                -- NULL: any type
  p_outcome jsonb,            -- what the ledger records for the waiting code
  p_grace_seconds double precision,
  p_resume_channel text,
  p_timers_channel text
) RETURNS TABLE (changed boolean, resumed_run_ids text[], waitpoint waitpoints)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  w waitpoints;
  resumed text[];
  limited_count int;
BEGIN
  UPDATE waitpoints SET status = p_status, completed_at = p_now, output = p_output,
         output_type = p_output_type, output_is_error = p_output_is_error
   WHERE id = p_id AND status = 'WAITING'
     AND (p_environment_id IS NULL OR environment_id = p_environment_id)
     AND (p_type IS NULL OR type = p_type)
  RETURNING * INTO w;
  IF NOT FOUND THEN
    SELECT * INTO w FROM waitpoints WHERE id = p_id AND (p_environment_id IS NULL OR environment_id = p_environment_id);
    RETURN QUERY SELECT false, '{}'::text[], w;
    RETURN;
  END IF;

  WITH resolved AS (
    UPDATE run_ledger SET resolved = true, outcome = p_outcome, resolved_at = p_now
    WHERE waitpoint_id = p_id AND NOT resolved RETURNING run_id),
  waiting AS (
    SELECT r.id, EXISTS (
      SELECT 1 FROM worker_tasks wt
      WHERE wt.environment_id = r.environment_id AND wt.queue_name = r.queue_name AND wt.concurrency_limit IS NOT NULL) AS limited
    FROM runs r WHERE r.id IN (SELECT run_id FROM resolved) AND r.status = 'WAITING'),
  due AS (
    UPDATE runs r SET resume_due_at = CASE WHEN waiting.limited THEN p_now ELSE p_now + make_interval(secs => p_grace_seconds) END
    FROM waiting WHERE r.id = waiting.id AND r.status = 'WAITING'
    RETURNING r.id, r.environment_id, waiting.limited),
  notified AS (
    -- ≤ 100 run ids per payload: `<environmentId> <waitpointId> <runId>,<runId>,…`
    SELECT pg_notify(p_resume_channel, environment_id || ' ' || p_id || ' ' || string_agg(id, ',' ORDER BY id)) FROM (
      SELECT id, environment_id, (row_number() OVER (PARTITION BY environment_id ORDER BY id) - 1) / 100 AS chunk
      FROM due WHERE NOT limited) c
    GROUP BY environment_id, chunk)
  SELECT coalesce(array_agg(due.id ORDER BY due.id), '{}'), count(*) FILTER (WHERE due.limited)
  INTO resumed, limited_count
  FROM due
  WHERE (SELECT count(*) FROM notified) >= 0;

  -- Resumes of limited queues go through pg-boss at once: wake the timer loops that hand them over.
  IF limited_count > 0 THEN
    PERFORM pg_notify(p_timers_channel, 'resume');
  END IF;
  RETURN QUERY SELECT true, resumed, w;
END;
$$;
