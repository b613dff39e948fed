-- A duration as durations.ts's parseDuration reads it ("30s", "10m", "1h30m", "2d", "1w": whole
-- numbers with units ms, s, m, h or hr, d, w), in milliseconds; NULL when `p_text` is not one. The
-- SQL side of a trigger (svc_trigger_run) reads delays and TTLs with it; test/trigger-in-sql.test.ts
-- checks it against parseDuration.
CREATE OR REPLACE FUNCTION svc_parse_duration(p_text text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_text text := btrim(p_text, E' \t\n\r\f\v');
  v_total numeric := 0;
  v_part text[];
BEGIN
  IF v_text IS NULL OR v_text !~ '^([0-9]+(ms|s|m|hr|h|d|w))+$' THEN RETURN NULL; END IF;
  FOR v_part IN SELECT regexp_matches(v_text, '([0-9]+)(ms|s|m|hr|h|d|w)', 'g') LOOP
    v_total := v_total + v_part[1]::numeric * CASE v_part[2]
      WHEN 'ms' THEN 1 WHEN 's' THEN 1000 WHEN 'm' THEN 60000 WHEN 'h' THEN 3600000 WHEN 'hr' THEN 3600000
      WHEN 'd' THEN 86400000 ELSE 604800000 END;
  END LOOP;
  RETURN v_total;
END;
$$;
