-- What a run's channel wait returns for a session record, as JSON text: `{ seq, id, data,
-- headers? }` (headers only when there are some). The one SQL spelling of it, for the functions
-- that complete channel waits (svc_append_session_records, svc_make_channel_wait); the engine's is
-- waitOutputJson (engine/sessions/records.ts), for the waits it completes itself.
CREATE OR REPLACE FUNCTION svc_channel_wait_output(p_seq bigint, p_part_id text, p_data text, p_headers jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT '{"seq":' || p_seq || ',"id":' || to_json(p_part_id)::text || ',"data":' || coalesce(p_data, 'null')
    || CASE WHEN p_headers IS NULL OR jsonb_typeof(p_headers) <> 'array' OR jsonb_array_length(p_headers) = 0 THEN '' ELSE ',"headers":' || p_headers::text END || '}'
$$;
