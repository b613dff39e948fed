-- An id as ids.ts's timeOrderedId makes it, after `p_prefix` ("run_", "batch_"): the time in ms as 9
-- base-36 characters, then 12 random base-36 ones, so that rows made in SQL (svc_trigger) sort and
-- land in their primary key's index as the engine's do.
CREATE OR REPLACE FUNCTION svc_time_ordered_id(p_prefix text, p_now timestamptz) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_alphabet constant text := '0123456789abcdefghijklmnopqrstuvwxyz';
  v_ms bigint := floor(extract(epoch FROM p_now) * 1000)::bigint;
  v_time text := '';
  v_random bytea := uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
  v_tail text := '';
  v_i int := 0;
BEGIN
  WHILE v_ms > 0 LOOP
    v_time := substr(v_alphabet, (v_ms % 36)::int + 1, 1) || v_time;
    v_ms := v_ms / 36;
  END LOOP;
  -- Bytes below 252 only (252 = 7 × 36): each then picks a character without bias.
  WHILE length(v_tail) < 12 LOOP
    IF v_i >= length(v_random) THEN
      v_random := uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
      v_i := 0;
    END IF;
    -- (Bytes 6 and 8 of a UUIDv4 hold its version and variant bits: skipped.)
    IF v_i % 16 NOT IN (6, 8) AND get_byte(v_random, v_i) < 252 THEN v_tail := v_tail || substr(v_alphabet, get_byte(v_random, v_i) % 36 + 1, 1); END IF;
    v_i := v_i + 1;
  END LOOP;
  RETURN p_prefix || lpad(v_time, 9, '0') || v_tail;
END;
$$;
