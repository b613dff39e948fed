-- Makes the SESSION waitpoint of a run's wait on a session channel, in one round trip
-- (engine/sessions/channel-waits.ts, makeChannelWaitpoint, calls it inside the transaction that
-- records the wait in the run's ledger; the meaning of each step is documented there).
--
-- Under the session row's lock, so that no append slips between the look for a record and the
-- wait: a closed session → the waitpoint COMPLETED with p_closed_error (an error); a record after
-- the cursor already there → COMPLETED with it (as svc_append_session_records completes a wait:
-- `{ seq, id, data, headers? }`), and for `.in` the session's in_delivered raised to it; else
-- WAITING, timing out at p_timeout_at or the session's expiry, whichever is first, with its
-- session_waits row for the next append to find (and the timer loops woken when it can time out).
--
-- p_after_seq: the run's cursor; NULL for its first wait: where the session started it
-- (session_runs.start_after), or, for a run the session did not start, its in_delivered.
--
-- Returns 'not_found', 'closed', 'arrived' or 'waiting'.
CREATE OR REPLACE FUNCTION svc_make_channel_wait(
  p_waitpoint_id text,
  p_environment_id text,
  p_ref text,
  p_run_id text,
  p_io text,
  p_after_seq bigint,
  p_timeout_at timestamptz,
  p_out_appended int,
  p_now timestamptz,
  p_closed_error text,
  p_output_type text,
  p_timers_channel text
) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  s sessions;
  cursor_seq bigint;
  found_record record;
  wait_until timestamptz;
BEGIN
  IF starts_with(p_ref, 'session_') THEN
    SELECT * INTO s FROM sessions WHERE id = p_ref AND environment_id = p_environment_id FOR UPDATE;
  ELSE
    SELECT * INTO s FROM sessions WHERE environment_id = p_environment_id AND external_id = p_ref FOR UPDATE;
  END IF;
  IF NOT FOUND THEN RETURN 'not_found'; END IF;

  IF s.closed_at IS NOT NULL THEN
    INSERT INTO waitpoints (id, environment_id, type, status, completed_at, output, output_type, output_is_error, created_at)
    VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'COMPLETED', p_now, p_closed_error, p_output_type, true, p_now);
    RETURN 'closed';
  END IF;

  cursor_seq := coalesce(p_after_seq, (SELECT sr.start_after FROM session_runs sr WHERE sr.session_id = s.id AND sr.run_id = p_run_id), s.in_delivered);
  SELECT r.seq, r.part_id, r.data, r.headers INTO found_record
    FROM session_records r WHERE r.session_id = s.id AND r.io = p_io AND r.seq > cursor_seq ORDER BY r.seq LIMIT 1;
  IF FOUND THEN
    INSERT INTO waitpoints (id, environment_id, type, status, completed_at, output, output_type, output_is_error, created_at)
    VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'COMPLETED', p_now,
            svc_channel_wait_output(found_record.seq, found_record.part_id, found_record.data, found_record.headers), p_output_type, false, p_now);
    IF p_io = 'in' THEN
      UPDATE sessions SET in_delivered = greatest(in_delivered, found_record.seq) WHERE id = s.id;
    END IF;
    RETURN 'arrived';
  END IF;

  wait_until := CASE WHEN s.expires_at IS NOT NULL AND (p_timeout_at IS NULL OR s.expires_at < p_timeout_at) THEN s.expires_at ELSE p_timeout_at END;
  INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, created_at)
  VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'WAITING', wait_until, p_now);
  INSERT INTO session_waits (waitpoint_id, session_id, io, after_seq, out_appended)
  VALUES (p_waitpoint_id, s.id, p_io, cursor_seq, p_out_appended);
  IF wait_until IS NOT NULL THEN
    PERFORM pg_notify(p_timers_channel, '');
  END IF;
  RETURN 'waiting';
END;
$$;
