-- Appends chunks to one stream of a run, in one round trip (engine/streams/chunks.ts,
-- appendStreamChunks, calls it; the meaning of each step is documented there).
--
-- Under the stream row's lock (made on the first append; which orders appends: each chunk takes
-- the next sequence number): chunks whose part id the stream already has are not stored again;
-- the rest are stored and announced on p_context.recordChannel (the SSE record in the notice when
-- it fits in a NOTIFY). A stream that would pass p_context.maxChunks refuses the whole append. The
-- first chunk of an `out` stream adds its key to runs.realtime_streams (realtime subscribers
-- subscribe to it); a run has at most p_context.maxStreams streams of each kind. An `in` chunk is
-- refused once the run is final, NOTIFYs p_context.inChannel (`<run>/<key> <seq>`, for `.once()`/`.on()`), and completes
-- the run's input waits on the stream with the first new chunk (svc_complete_waitpoint).
--
-- p_records: [{ "data": JSON text, "partId": text }]
-- p_writer: null, or the run's own appends { claimToken }: fenced by the run's claim.
-- p_context: { recordChannel, inChannel, finalStatuses, maxChunks, maxStreams, resumeChannel, readyChannel, offers }
--
-- Returns `result`: { error: "fenced" | "not_found" | "finished" | "full" | "too_many_streams" } or
-- { seqs: [seq per input], duplicates: [bool per input] }; and the runs the completed waits offered
-- to workers with their ledgers (svc_complete_waitpoint's), for the calling statement to announce.
CREATE OR REPLACE FUNCTION svc_append_run_stream_records(
  p_environment_id text,
  p_run_id text,
  p_io text,
  p_key text,
  p_now timestamptz,
  p_records jsonb,
  p_writer jsonb,
  p_context jsonb
) RETURNS TABLE (result jsonb, offered_runs runs[], offered_ledgers json[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  run_status text;
  st run_streams;
  stored jsonb;
  fresh_count int;
  first_seq bigint;
  first_data text;
  record_output text;
  waiting record;
  stream_id text := p_run_id || '/' || p_key;
  sent int;
  was_changed boolean;
  run_offers runs[];
  ledger_offers json[];
  all_runs runs[] := '{}';
  all_ledgers json[] := '{}';
BEGIN
  IF p_writer IS NOT NULL THEN
    -- The lock the realtime_streams update below takes, taken now: two appends of one run (two
    -- streams piped at once) never both hold a weaker one and wait to strengthen it.
    SELECT r.status INTO run_status FROM runs r
      WHERE r.id = p_run_id AND r.environment_id = p_environment_id AND r.claim_token = p_writer->>'claimToken' AND r.status = 'EXECUTING' FOR NO KEY UPDATE;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'fenced'), NULL::runs[], NULL::json[]; RETURN; END IF;
  ELSE
    SELECT r.status INTO run_status FROM runs r WHERE r.id = p_run_id AND r.environment_id = p_environment_id;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'not_found'), NULL::runs[], NULL::json[]; RETURN; END IF;
  END IF;

  SELECT * INTO st FROM run_streams WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    IF (SELECT count(*) FROM run_streams WHERE run_id = p_run_id AND io = p_io) >= (p_context->>'maxStreams')::int THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'too_many_streams'), NULL::runs[], NULL::json[]; RETURN;
    END IF;
    -- The run's row before the stream's (a new stream holds no lock yet), the order a run's own
    -- wait on an input stream takes them in (its claim, then the stream): no deadlock between them.
    IF p_io = 'out' THEN
      UPDATE runs SET realtime_streams = array_append(coalesce(realtime_streams, '{}'), p_key)
       WHERE id = p_run_id AND NOT (coalesce(realtime_streams, '{}') @> ARRAY[p_key]);
    END IF;
    INSERT INTO run_streams (environment_id, run_id, io, stream_key, created_at)
    VALUES (p_environment_id, p_run_id, p_io, p_key, p_now) ON CONFLICT DO NOTHING;
    SELECT * INTO st FROM run_streams WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key FOR UPDATE;
  END IF;

  WITH k AS MATERIALIZED (
    SELECT x->>'partId' AS part_id,
           (SELECT r.seq FROM run_stream_records r WHERE r.run_id = p_run_id AND r.io = p_io AND r.stream_key = p_key AND r.part_id = x->>'partId') AS seq
    FROM jsonb_array_elements(p_records) x)
  SELECT coalesce(jsonb_object_agg(k.part_id, k.seq) FILTER (WHERE k.seq IS NOT NULL), '{}') INTO stored FROM k;

  SELECT count(*) INTO fresh_count FROM jsonb_array_elements(p_records) x WHERE NOT stored ? (x->>'partId');
  first_seq := st.last_seq + 1;
  IF fresh_count > 0 THEN
    IF p_io = 'in' AND run_status = ANY (ARRAY(SELECT jsonb_array_elements_text(p_context->'finalStatuses'))) THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'finished'), NULL::runs[], NULL::json[]; RETURN;
    END IF;
    IF st.last_seq + fresh_count > (p_context->>'maxChunks')::bigint THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'full'), NULL::runs[], NULL::json[]; RETURN;
    END IF;

    WITH fresh AS (
      SELECT x, first_seq + row_number() OVER (ORDER BY ord) - 1 AS seq
      FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
      WHERE NOT stored ? (x->>'partId')),
    inserted AS (
      INSERT INTO run_stream_records (environment_id, run_id, io, stream_key, seq, part_id, data, created_at)
      SELECT p_environment_id, p_run_id, p_io, p_key, fresh.seq, fresh.x->>'partId', fresh.x->>'data', p_now
      FROM fresh
      RETURNING seq, part_id, data),
    announced AS (
      -- The SSE record (see streamRecordJson), inside the notice when the notice stays under 8000 bytes.
      SELECT i.seq, json_build_object(
          'seq_num', i.seq,
          'timestamp', floor(extract(epoch FROM p_now) * 1000)::bigint,
          'headers', '[]'::json,
          'body', '{"data":' || i.data || ',"id":' || to_json(i.part_id)::text || '}')::text AS record
      FROM inserted i),
    notices AS (
      SELECT pg_notify(p_context->>'recordChannel',
        CASE WHEN octet_length(n.head || ',"r":' || n.record || '}') <= 7900 THEN n.head || ',"r":' || n.record || '}' ELSE n.head || '}' END)
      FROM (
        SELECT a.record, '{"e":' || to_json(p_environment_id)::text || ',"k":' || to_json(stream_id)::text || ',"s":' || to_json(stream_id)::text
                 || ',"io":"' || p_io || '","seq":' || a.seq AS head
        FROM announced a ORDER BY a.seq) n)
    SELECT count(*) INTO sent FROM notices;

    UPDATE run_streams SET last_seq = last_seq + fresh_count WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key;

    IF p_io = 'in' THEN
      PERFORM pg_notify(p_context->>'inChannel', stream_id || ' ' || (first_seq + fresh_count - 1));
      SELECT t.x->>'data' INTO first_data
        FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
        WHERE NOT stored ? (t.x->>'partId') ORDER BY t.ord LIMIT 1;
      record_output := '{"seq":' || first_seq || ',"data":' || first_data || '}';
      -- The waits this chunk ends leave run_input_waits; one that already timed out is just
      -- removed (svc_complete_waitpoint changes nothing).
      FOR waiting IN
        DELETE FROM run_input_waits w WHERE w.run_id = p_run_id AND w.stream_key = p_key AND w.after_seq < first_seq
        RETURNING w.waitpoint_id
      LOOP
        SELECT c.changed, c.offered_runs, c.offered_ledgers INTO was_changed, run_offers, ledger_offers FROM svc_complete_waitpoint(
          waiting.waitpoint_id, 'COMPLETED', p_now, record_output,
          'application/json', false, p_environment_id, 'MANUAL',
          jsonb_build_object('ok', true, 'outputType', 'application/json', 'output', record_output),
          p_context->>'resumeChannel', p_context->>'readyChannel', p_context->'offers') c;
        IF run_offers IS NOT NULL THEN
          all_runs := all_runs || run_offers;
          all_ledgers := all_ledgers || ledger_offers;
        END IF;
      END LOOP;
    END IF;
  END IF;

  RETURN QUERY SELECT jsonb_build_object(
    'seqs', (SELECT jsonb_agg(CASE WHEN n.duplicate THEN (stored->>n.part_id)::bigint ELSE first_seq + n.fresh_before END ORDER BY n.ord) FROM (
               SELECT t.ord, t.x->>'partId' AS part_id, stored ? (t.x->>'partId') AS duplicate,
                      coalesce(count(*) FILTER (WHERE NOT stored ? (t.x->>'partId')) OVER (ORDER BY t.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS fresh_before
               FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)) n),
    'duplicates', (SELECT jsonb_agg(stored ? (t.x->>'partId') ORDER BY t.ord) FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord))),
    all_runs, all_ledgers;
END;
$$;
