-- Appends records to one channel of a session, in one round trip (engine/sessions/append-record.ts
-- calls it; the meaning of each step is documented there).
--
-- Under the session row's lock (which orders appends: each record takes the next sequence number):
-- records whose part id the channel already has are not stored again; a closed or expired session
-- refuses the others; the rest are stored and announced on p_context.recordChannel (the payload of
-- recordNotice, with the record when it fits in a NOTIFY). An `.in` append completes every WAITING
-- channel wait of the session with its first record (svc_complete_waitpoint, whose resume
-- parameters p_context carries) and says whether the session needs a run started (its current run
-- is missing or final: the caller starts one, which this SQL cannot).
--
-- p_records: [{ "data": JSON text | null, "headers": [[name, value]] | null, "partId": text }]
-- p_writer: null, or a run's appends { runId, claimToken }: fenced by the run's claim.
-- p_context: { recordChannel, inChannel, finalStatuses, resumeChannel, readyChannel, offers }
--
-- Returns `result`: { error: "fenced" | "not_found" | "closed" | "expired" } or
-- { sessionId, seqs: [seq per input], duplicates: [bool per input], needsRun }; and the runs the
-- completed waits offered to workers with their ledgers (svc_complete_waitpoint's), for the calling
-- statement to announce (SEND_OFFERS).
CREATE OR REPLACE FUNCTION svc_append_session_records(
  p_environment_id text,
  p_ref text,
  p_io text,
  p_now timestamptz,
  p_records jsonb,
  p_writer jsonb,
  p_context jsonb
) RETURNS TABLE (result jsonb, offered_runs runs[], offered_ledgers json[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  s sessions;
  stored jsonb;
  fresh_count int;
  first_seq bigint;
  first_record record;
  record_output text;
  waiting record;
  delivered int := 0;
  needs_run boolean := false;
  stream_key text;
  sent int;
  was_changed boolean;
  run_offers runs[];
  ledger_offers json[];
  all_runs runs[] := '{}';
  all_ledgers json[] := '{}';
BEGIN
  IF p_writer IS NOT NULL THEN
    PERFORM 1 FROM runs WHERE id = p_writer->>'runId' AND claim_token = p_writer->>'claimToken' AND status = 'EXECUTING' FOR UPDATE;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'fenced'), NULL::runs[], NULL::json[]; RETURN; END IF;
  END IF;
  IF starts_with(p_ref, 'session_') THEN
    SELECT * INTO s FROM sessions WHERE id = p_ref AND environment_id = p_environment_id FOR UPDATE;
  ELSE
    SELECT * INTO s FROM sessions WHERE environment_id = p_environment_id AND external_id = p_ref FOR UPDATE;
  END IF;
  IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'not_found'), NULL::runs[], NULL::json[]; RETURN; END IF;

  -- One index lookup per record, a subquery the planner cannot turn into a join: `IN (SELECT …)`
  -- (or a join) was planned as a scan of every record of the channel, a cost that grew with the
  -- conversation.
  WITH k AS MATERIALIZED (
    SELECT x->>'partId' AS part_id,
           (SELECT r.seq FROM session_records r WHERE r.session_id = s.id AND r.io = p_io AND r.part_id = x->>'partId') AS seq
    FROM jsonb_array_elements(p_records) x)
  SELECT coalesce(jsonb_object_agg(k.part_id, k.seq) FILTER (WHERE k.seq IS NOT NULL), '{}') INTO stored FROM k;

  SELECT count(*) INTO fresh_count FROM jsonb_array_elements(p_records) x WHERE NOT stored ? (x->>'partId');
  IF fresh_count > 0 THEN
    -- A part already stored is acknowledged whatever became of the session since; new ones are not.
    IF s.closed_at IS NOT NULL THEN RETURN QUERY SELECT jsonb_build_object('error', 'closed'), NULL::runs[], NULL::json[]; RETURN; END IF;
    IF s.expires_at IS NOT NULL AND s.expires_at <= p_now THEN RETURN QUERY SELECT jsonb_build_object('error', 'expired'), NULL::runs[], NULL::json[]; RETURN; END IF;
    -- The row is locked: its counters are the latest (the session's row is written once, below).
    first_seq := CASE WHEN p_io = 'in' THEN s.in_seq ELSE s.out_seq END + 1;
    stream_key := coalesce(s.external_id, s.id);

    WITH fresh AS (
      SELECT x, first_seq + row_number() OVER (ORDER BY ord) - 1 AS seq
      FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
      WHERE NOT stored ? (x->>'partId')),
    inserted AS (
      INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at)
      SELECT s.id, p_io, fresh.seq, fresh.x->>'partId', fresh.x->>'data',
             CASE WHEN jsonb_typeof(fresh.x->'headers') = 'array' AND jsonb_array_length(fresh.x->'headers') > 0 THEN fresh.x->'headers' END, p_now
      FROM fresh
      RETURNING seq, part_id, data, headers),
    announced AS (
      -- The SSE record (see sseRecordJson), inside the notice when the notice stays under 8000 bytes.
      SELECT i.seq, json_build_object(
          'seq_num', i.seq,
          'timestamp', floor(extract(epoch FROM p_now) * 1000)::bigint,
          'headers', coalesce(i.headers, '[]'::jsonb),
          'body', CASE WHEN i.data IS NULL THEN '' ELSE '{"data":' || i.data || ',"id":' || to_json(i.part_id)::text || '}' END)::text AS record
      FROM inserted i),
    notices AS (
      -- In sequence order: the ordered subquery is read in order, and each row notified as it is read.
      SELECT pg_notify(p_context->>'recordChannel',
        CASE WHEN octet_length(n.head || ',"r":' || n.record || '}') <= 7900 THEN n.head || ',"r":' || n.record || '}' ELSE n.head || '}' END)
      FROM (
        SELECT a.record, '{"e":' || to_json(s.environment_id)::text || ',"k":' || to_json(stream_key)::text || ',"s":' || to_json(s.id)::text
                 || ',"io":"' || p_io || '","seq":' || a.seq AS head
        FROM announced a ORDER BY a.seq) n)
    SELECT count(*) INTO sent FROM notices;

    IF p_io = 'in' THEN
      -- For runs waiting in session.in.once (a wait that keeps its worker slot).
      PERFORM pg_notify(p_context->>'inChannel', s.id || ' ' || (first_seq + fresh_count - 1));
      -- The first new record, as stored just above (not read back): what the waits it ends get
      -- (the JSON waitOutputJson makes of a stored record).
      SELECT t.x->>'partId' AS part_id, t.x->>'data' AS data,
             CASE WHEN jsonb_typeof(t.x->'headers') = 'array' AND jsonb_array_length(t.x->'headers') > 0 THEN t.x->'headers' END AS headers
        INTO first_record
        FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
        WHERE NOT stored ? (t.x->>'partId') ORDER BY t.ord LIMIT 1;
      record_output := svc_channel_wait_output(first_seq, first_record.part_id, first_record.data, first_record.headers);
      -- The waits this record ends leave session_waits (so the next append does not read them
      -- again); one that already timed out is just removed (svc_complete_waitpoint changes nothing).
      FOR waiting IN
        DELETE FROM session_waits sw WHERE sw.session_id = s.id AND sw.io = 'in' AND sw.after_seq < first_seq
        RETURNING sw.waitpoint_id, sw.out_appended
      LOOP
        SELECT c.changed, c.offered_runs, c.offered_ledgers INTO was_changed, run_offers, ledger_offers FROM svc_complete_waitpoint(
          waiting.waitpoint_id, 'COMPLETED', p_now, record_output,
          'application/json', false, p_environment_id, 'SESSION',
          jsonb_strip_nulls(jsonb_build_object('ok', true, 'outputType', 'application/json', 'outAppended', waiting.out_appended, 'output', record_output)),
          p_context->>'resumeChannel', p_context->>'readyChannel', p_context->'offers') c;
        IF was_changed THEN delivered := delivered + 1; END IF;
        IF run_offers IS NOT NULL THEN
          all_runs := all_runs || run_offers;
          all_ledgers := all_ledgers || ledger_offers;
        END IF;
      END LOOP;
      UPDATE sessions SET in_seq = in_seq + fresh_count,
             in_delivered = CASE WHEN delivered > 0 THEN greatest(in_delivered, first_seq) ELSE in_delivered END
       WHERE id = s.id;
      needs_run := s.current_run_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM runs r WHERE r.id = s.current_run_id
          AND r.status <> ALL (ARRAY(SELECT jsonb_array_elements_text(p_context->'finalStatuses'))));
    ELSE
      UPDATE sessions SET out_seq = out_seq + fresh_count WHERE id = s.id;
    END IF;
  END IF;

  -- Each input's sequence number: a duplicate's as stored before, a new one's in input order
  -- from first_seq (as the INSERT above numbered them).
  RETURN QUERY SELECT jsonb_build_object(
    'sessionId', s.id,
    'needsRun', needs_run,
    'seqs', (SELECT jsonb_agg(CASE WHEN n.duplicate THEN (stored->>n.part_id)::bigint ELSE first_seq + n.fresh_before END ORDER BY n.ord) FROM (
               SELECT t.ord, t.x->>'partId' AS part_id, stored ? (t.x->>'partId') AS duplicate,
                      count(*) FILTER (WHERE NOT stored ? (t.x->>'partId')) OVER (ORDER BY t.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS fresh_before
               FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)) n),
    'duplicates', (SELECT jsonb_agg(stored ? (t.x->>'partId') ORDER BY t.ord) FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord))),
    all_runs, all_ledgers;
END;
$$;
