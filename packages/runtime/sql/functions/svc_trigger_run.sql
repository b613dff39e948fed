-- One run of a trigger made in SQL (svc_trigger, svc_batch_trigger): what engine/runs/plan-run.ts
-- decides for a trigger over HTTP, and what engine/runs/trigger.ts does with an idempotency key,
-- written in SQL so that a database trigger or any client can start a run inside its own
-- transaction. test/trigger-in-sql.test.ts triggers the same inputs both ways and compares the rows
-- (and the refusals): a change to one side that the other does not follow fails there.
--
-- The run is inserted QUEUED (or DELAYED), never offered to a worker here: an offer holds a worker's
-- lease from when it is made, and the caller's transaction may stay open longer than that lease. A
-- single run (no batch) that could start at once is marked `offer_at_commit`: the deferred trigger
-- runs_offer_at_commit offers it at COMMIT (svc_offer_at_commit, migration 0052). For the others the
-- caller (svc_trigger, svc_batch_trigger) NOTIFYs, and the NOTIFY goes out when the transaction
-- commits: then a worker claims the run from `runs`. Rolled back (or rolled back to a savepoint),
-- nothing was written and nothing is sent.
--
-- Options (camelCase, as the HTTP trigger's): idempotencyKey, idempotencyKeyTTL, delay, ttl, tags,
-- metadata, maxAttempts, maxDuration, queue, concurrencyKey, rateLimit ({ key?, limit?, period? }), concurrency (named limits),
-- gates ([{ queue, concurrencyKey? }]), test. A JSON null counts as absent; any
-- other key is refused (debounce, parentRunId and uploaded payloads need the HTTP API). Bad input
-- raises invalid_parameter_value (22023) with the message the HTTP API would answer.
CREATE OR REPLACE FUNCTION svc_trigger_run(p_environment_id text, p_project_id text, p_task text, p_payload jsonb, p_options jsonb,
  p_batch_id text, p_batch_index integer, p_now timestamptz)
RETURNS TABLE (run_id text, run_status text, run_queue text, is_cached boolean)
LANGUAGE plpgsql VOLATILE SET TimeZone = 'UTC' AS $$
DECLARE
  c_max_duration_ms constant numeric := 1000::numeric * 365 * 86400000;
  c_known constant text[] := ARRAY['idempotencyKey', 'idempotencyKeyTTL', 'delay', 'ttl', 'tags', 'metadata', 'maxAttempts',
    'maxDuration', 'queue', 'concurrencyKey', 'rateLimit', 'concurrency', 'gates', 'test'];
  o jsonb;
  v_unknown text;
  v_tags_json jsonb;
  v_tags text[] := '{}';
  v_long text;
  v_text text;
  v_ms numeric;
  v_delay timestamptz;
  v_status text := 'QUEUED';
  v_ttl text;
  v_expire timestamptz;
  v_key text;
  v_key_ttl_ms numeric := 30::numeric * 86400000;
  v_queue text;
  v_concurrency_key text;
  v_rate_key text;
  v_rate_limit integer;
  v_rate_period_ms integer;
  v_limits text[];
  v_plain boolean;
  v_task record;
  v_held text[];
  v_gates jsonb;
  v_max_attempts integer;
  v_max_duration integer;
  v_test boolean := false;
  v_id text;
  v_existing record;
BEGIN
  IF p_task IS NULL OR length(p_task) < 1 OR length(p_task) > 128 THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'taskId: must be 1 to 128 characters';
  END IF;
  IF p_options IS NOT NULL AND jsonb_typeof(p_options) NOT IN ('object', 'null') THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options: must be a JSON object';
  END IF;
  SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}') INTO o
    FROM jsonb_each(CASE WHEN jsonb_typeof(p_options) = 'object' THEN p_options ELSE '{}' END) e WHERE jsonb_typeof(e.value) <> 'null';
  SELECT k INTO v_unknown FROM jsonb_object_keys(o) k WHERE k <> ALL (c_known) ORDER BY k LIMIT 1;
  IF v_unknown IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('options.%s: not an option of a trigger in SQL (it takes %s)', v_unknown, array_to_string(c_known, ', '));
  END IF;

  -- Tags: one or a list, trimmed, blanks dropped, duplicates dropped (first kept), at most 10 of 128 characters.
  v_tags_json := o -> 'tags';
  IF jsonb_typeof(v_tags_json) = 'string' THEN v_tags_json := jsonb_build_array(v_tags_json); END IF;
  IF v_tags_json IS NOT NULL THEN
    IF jsonb_typeof(v_tags_json) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_tags_json) t WHERE jsonb_typeof(t) <> 'string') THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.tags: must be a string or an array of strings';
    END IF;
    SELECT coalesce(array_agg(d.tag ORDER BY d.first_at), '{}') INTO v_tags FROM (
      SELECT s.tag, min(s.ord) AS first_at FROM (
        SELECT regexp_replace(x, '^\s+|\s+$', '', 'g') AS tag, ord FROM jsonb_array_elements_text(v_tags_json) WITH ORDINALITY AS e(x, ord)) s
      WHERE s.tag <> '' GROUP BY s.tag) d;
    IF cardinality(v_tags) > 10 THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('Runs can only have 10 tags, you''re trying to set %s.', cardinality(v_tags));
    END IF;
    SELECT t INTO v_long FROM unnest(v_tags) t WHERE length(t) > 128 LIMIT 1;
    IF v_long IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('tags: each tag must be at most 128 characters ("%s…")', left(v_long, 20));
    END IF;
  END IF;

  -- Delay: a duration from now, a date (ISO 8601), or epoch milliseconds. Past or now: not delayed.
  IF o ? 'delay' THEN
    IF jsonb_typeof(o -> 'delay') = 'number' THEN
      v_delay := to_timestamp((o ->> 'delay')::numeric / 1000);
    ELSIF jsonb_typeof(o -> 'delay') = 'string' THEN
      v_text := o ->> 'delay';
      v_ms := svc_parse_duration(v_text);
      IF v_ms IS NOT NULL THEN
        IF v_ms > c_max_duration_ms THEN
          RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('delay: "%s" is too long (at most 365000d)', v_text);
        END IF;
        v_delay := p_now + make_interval(secs => v_ms / 1000);
      ELSIF btrim(v_text) ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}' THEN
        BEGIN
          v_delay := v_text::timestamptz;
        EXCEPTION WHEN datetime_field_overflow THEN
          RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('delay: "%s" is not a date on the calendar', v_text);
        WHEN invalid_datetime_format THEN
          v_delay := NULL;
        END;
      END IF;
      IF v_delay IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('delay: "%s" is neither a duration (e.g. "30s", "10m", "1h30m", "2d") nor an ISO 8601 date', v_text);
      END IF;
    ELSE
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.delay: must be a duration, an ISO 8601 date or epoch milliseconds';
    END IF;
    IF v_delay > p_now THEN v_status := 'DELAYED'; ELSE v_delay := NULL; END IF;
  END IF;

  -- TTL: a duration, or whole seconds; counted from the delay's end for a delayed run.
  IF o ? 'ttl' THEN
    IF jsonb_typeof(o -> 'ttl') = 'number' THEN
      v_ms := (o ->> 'ttl')::numeric;
      IF v_ms < 0 OR v_ms <> trunc(v_ms) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.ttl: must be a duration or a whole number of seconds';
      END IF;
      v_ttl := v_ms || 's';
      v_ms := v_ms * 1000;
    ELSIF jsonb_typeof(o -> 'ttl') = 'string' THEN
      v_ttl := o ->> 'ttl';
      v_ms := svc_parse_duration(v_ttl);
      IF v_ms IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('ttl: "%s" is not a duration (e.g. "30s", "10m", "1h", "7d")', v_ttl);
      END IF;
    ELSE
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.ttl: must be a duration or a whole number of seconds';
    END IF;
    IF v_ms > c_max_duration_ms THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('ttl: "%s" is too long (at most 365000d)', v_ttl);
    END IF;
    v_expire := coalesce(v_delay, p_now) + make_interval(secs => v_ms / 1000);
  END IF;

  IF o ? 'metadata' AND jsonb_typeof(o -> 'metadata') <> 'object' THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'metadata: must be a JSON object';
  END IF;

  IF o ? 'idempotencyKey' THEN
    v_key := o ->> 'idempotencyKey';
    IF jsonb_typeof(o -> 'idempotencyKey') <> 'string' OR v_key = '' OR octet_length(v_key) > 2048 THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.idempotencyKey: must be a string of 1 to 2048 bytes';
    END IF;
  END IF;
  IF o ? 'idempotencyKeyTTL' THEN
    v_text := o ->> 'idempotencyKeyTTL';
    v_key_ttl_ms := CASE WHEN jsonb_typeof(o -> 'idempotencyKeyTTL') = 'string' THEN svc_parse_duration(v_text) END;
    IF v_key_ttl_ms IS NULL THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('idempotencyKeyTTL: "%s" is not a duration (e.g. "30s", "10m", "1h", "7d")', v_text);
    END IF;
    IF v_key_ttl_ms > c_max_duration_ms THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('idempotencyKeyTTL: "%s" is too long (at most 365000d)', v_text);
    END IF;
  END IF;

  IF o ? 'queue' THEN
    v_queue := CASE jsonb_typeof(o -> 'queue') WHEN 'string' THEN o ->> 'queue' WHEN 'object' THEN
      CASE WHEN jsonb_typeof(o -> 'queue' -> 'name') = 'string' THEN o -> 'queue' ->> 'name' END END;
    IF v_queue IS NULL OR length(v_queue) < 1 OR length(v_queue) > 128 THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.queue: must be a queue name (or { "name": … }) of 1 to 128 characters';
    END IF;
  END IF;
  IF o ? 'concurrencyKey' THEN
    IF jsonb_typeof(o -> 'concurrencyKey') NOT IN ('string', 'number') OR length(o ->> 'concurrencyKey') > 512 THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.concurrencyKey: must be a string of at most 512 characters, or a number';
    END IF;
    v_concurrency_key := o ->> 'concurrencyKey';
  END IF;
  -- The rate key, and the run's own bound (migration 0055): limit and period together
  -- (engine/runs/trigger-rate-limit.ts). A JSON null counts as absent.
  IF o ? 'rateLimit' THEN
    IF jsonb_typeof(o -> 'rateLimit') <> 'object' THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.rateLimit: must be an object ({ "key"?, "limit"?, "period"? })';
    END IF;
    SELECT string_agg(format('`%s`', k), ', ' ORDER BY k) INTO v_text FROM jsonb_object_keys(o -> 'rateLimit') k WHERE k NOT IN ('key', 'limit', 'period');
    IF v_text IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('options.rateLimit: takes key, limit and period (got %s)', v_text);
    END IF;
    IF (o -> 'rateLimit') ? 'key' AND jsonb_typeof(o -> 'rateLimit' -> 'key') <> 'null' THEN
      IF jsonb_typeof(o -> 'rateLimit' -> 'key') NOT IN ('string', 'number') OR (o -> 'rateLimit' ->> 'key') = ''
         OR length(o -> 'rateLimit' ->> 'key') > 512 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.rateLimit.key: must be a string of 1 to 512 characters, or a number';
      END IF;
      v_rate_key := o -> 'rateLimit' ->> 'key';
    END IF;
    IF coalesce(jsonb_typeof(o -> 'rateLimit' -> 'limit'), 'null') <> 'null' OR coalesce(jsonb_typeof(o -> 'rateLimit' -> 'period'), 'null') <> 'null' THEN
      IF coalesce(jsonb_typeof(o -> 'rateLimit' -> 'limit'), 'null') = 'null' OR coalesce(jsonb_typeof(o -> 'rateLimit' -> 'period'), 'null') = 'null' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = 'options.rateLimit: limit and period go together (the run starts only while its key''s starts in the last `period` number fewer than `limit`)';
      END IF;
      IF jsonb_typeof(o -> 'rateLimit' -> 'limit') <> 'number' OR (o -> 'rateLimit' ->> 'limit')::numeric NOT BETWEEN 1 AND 1000000
         OR (o -> 'rateLimit' ->> 'limit')::numeric <> trunc((o -> 'rateLimit' ->> 'limit')::numeric) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.rateLimit.limit: must be a whole number from 1 to 1,000,000';
      END IF;
      v_ms := CASE jsonb_typeof(o -> 'rateLimit' -> 'period')
        WHEN 'number' THEN (o -> 'rateLimit' ->> 'period')::numeric
        WHEN 'string' THEN svc_parse_duration(o -> 'rateLimit' ->> 'period') END;
      IF v_ms IS NULL OR v_ms NOT BETWEEN 1 AND 7 * 86400000 OR v_ms <> trunc(v_ms) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.rateLimit.period: must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days';
      END IF;
      v_rate_limit := (o -> 'rateLimit' ->> 'limit')::integer;
      v_rate_period_ms := v_ms::integer;
    END IF;
  END IF;
  -- Named concurrency limits (migration 0048): at most two names; a run holding one is always the
  -- limited claim's, and the environment's workers are told (they claim its queue that way; the
  -- workers of a task that declares limits know its queue without being told).
  IF o ? 'concurrency' THEN
    IF jsonb_typeof(o -> 'concurrency') <> 'array' OR jsonb_array_length(o -> 'concurrency') > 2
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(o -> 'concurrency') e
                  WHERE jsonb_typeof(e) <> 'string' OR NOT (e #>> '{}') ~ '^[a-zA-Z0-9_-]{1,122}$') THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.concurrency: must be a list of at most 2 names of 1-122 letters, digits, `_` or `-`';
    END IF;
    SELECT array_agg(DISTINCT e ORDER BY e) INTO v_limits FROM jsonb_array_elements_text(o -> 'concurrency') e;
  END IF;
  -- Gates (migration 0049): at most three { queue, concurrencyKey? } (names of 1 to 128
  -- characters; a null key counts as none), distinct, the first of two alike kept in the order
  -- given (engine/runs/gates.ts); an empty list is none. A gated run is the limited claim's, and the
  -- environment's workers are told, as for named limits.
  IF o ? 'gates' THEN
    IF jsonb_typeof(o -> 'gates') <> 'array' OR jsonb_array_length(o -> 'gates') > 3
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(o -> 'gates') e WHERE CASE WHEN jsonb_typeof(e) <> 'object' THEN true ELSE
            EXISTS (SELECT 1 FROM jsonb_object_keys(e) k WHERE k NOT IN ('queue', 'concurrencyKey'))
            OR coalesce(jsonb_typeof(e -> 'queue'), '') <> 'string' OR length(e ->> 'queue') NOT BETWEEN 1 AND 128
            OR coalesce(jsonb_typeof(e -> 'concurrencyKey'), 'null') NOT IN ('null', 'string')
            OR (jsonb_typeof(e -> 'concurrencyKey') = 'string' AND length(e ->> 'concurrencyKey') NOT BETWEEN 1 AND 128) END) THEN
      RAISE EXCEPTION USING ERRCODE = '22023',
        MESSAGE = 'options.gates: must be a list of at most 3 gates, each { "queue": …, "concurrencyKey"?: … } of 1 to 128 characters';
    END IF;
    SELECT jsonb_agg(d.gate ORDER BY d.first_at) INTO v_gates FROM (
      SELECT DISTINCT ON (x.e ->> 'queue', x.e ->> 'concurrencyKey')
        CASE WHEN jsonb_typeof(x.e -> 'concurrencyKey') = 'string'
          THEN jsonb_build_object('queue', x.e -> 'queue', 'concurrencyKey', x.e -> 'concurrencyKey')
          ELSE jsonb_build_object('queue', x.e -> 'queue') END AS gate,
        x.ord AS first_at
      FROM jsonb_array_elements(o -> 'gates') WITH ORDINALITY AS x(e, ord)
      ORDER BY x.e ->> 'queue', x.e ->> 'concurrencyKey', x.ord) d;
  END IF;
  IF o ? 'maxAttempts' THEN
    IF jsonb_typeof(o -> 'maxAttempts') <> 'number' OR (o ->> 'maxAttempts')::numeric NOT BETWEEN 1 AND 100
       OR (o ->> 'maxAttempts')::numeric <> trunc((o ->> 'maxAttempts')::numeric) THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.maxAttempts: must be a whole number from 1 to 100';
    END IF;
    v_max_attempts := (o ->> 'maxAttempts')::integer;
  END IF;
  IF o ? 'maxDuration' THEN
    IF jsonb_typeof(o -> 'maxDuration') <> 'number' OR (o ->> 'maxDuration')::numeric NOT BETWEEN 1 AND 2147483647
       OR (o ->> 'maxDuration')::numeric <> trunc((o ->> 'maxDuration')::numeric) THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.maxDuration: must be a whole number of seconds from 1 to 2147483647';
    END IF;
    v_max_duration := (o ->> 'maxDuration')::integer;
  END IF;
  IF o ? 'test' THEN
    IF jsonb_typeof(o -> 'test') <> 'boolean' THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.test: must be true or false';
    END IF;
    v_test := (o ->> 'test')::boolean;
  END IF;

  -- The live run holding the key answers (isCached); a run that failed or expired, or a key past
  -- its TTL, frees the key (trigger.ts, findLiveIdempotentRun). Unlike there, the run is read without
  -- FOR UPDATE: the caller's transaction may stay open long after, and a run it held locked would
  -- be skipped by the claim that the run's own wake-up sent a worker to make. The key is cleared by
  -- a guarded update instead (zero rows: another transaction cleared it first).
  -- A conflict on insert (another transaction took the key after the lookup, and committed) goes
  -- round again: the lookup then finds its run.
  FOR i IN 1..3 LOOP
    IF v_key IS NOT NULL THEN
      SELECT r.id, r.status, r.queue_name, r.idempotency_key_expires_at INTO v_existing FROM runs r
        WHERE r.environment_id = p_environment_id AND r.task_identifier = p_task AND r.idempotency_key = v_key;
      IF FOUND THEN
        IF (v_existing.idempotency_key_expires_at IS NOT NULL AND v_existing.idempotency_key_expires_at <= p_now)
           OR v_existing.status IN ('FAILED', 'CRASHED', 'SYSTEM_FAILURE', 'EXPIRED', 'TIMED_OUT') THEN
          UPDATE runs r SET idempotency_key = NULL, updated_at = p_now WHERE r.id = v_existing.id AND r.idempotency_key = v_key;
        ELSE
          RETURN QUERY SELECT v_existing.id, v_existing.status, v_existing.queue_name, true;
          RETURN;
        END IF;
      END IF;
    END IF;

    v_id := svc_time_ordered_id('run_', p_now);
    -- The task's registration gives the run its queue (unless named) and the concurrency limits
    -- its code declares (migration 0050): the trigger's own names replace the declared named ones,
    -- never the task's inline limit (task/<id>), as insert-runs.ts does.
    SELECT wt.queue_name, wt.concurrency_limits INTO v_task FROM worker_tasks wt
      WHERE wt.environment_id = p_environment_id AND wt.task_identifier = p_task;
    v_queue := coalesce(v_queue, v_task.queue_name, 'task/' || p_task);
    v_held := CASE WHEN v_limits IS NULL THEN v_task.concurrency_limits
                   WHEN 'task/' || p_task = ANY (v_task.concurrency_limits) THEN v_limits || ('task/' || p_task)
                   ELSE v_limits END;
    v_plain := v_held IS NULL AND v_gates IS NULL AND v_rate_limit IS NULL AND NOT (SELECT l.limited FROM svc_queue_is_limited(p_environment_id, v_queue) l);
    INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, concurrency_key, payload, payload_type,
      idempotency_key, idempotency_key_user, idempotency_key_expires_at, tags, metadata, max_attempts, max_duration_s, ttl, expire_at,
      delay_until, trigger_function, batch_id, batch_index, is_test, created_at, updated_at, claim_from_runs, rate_limit_key, concurrency_limits, gates,
      rate_limit, rate_period_ms, offer_at_commit)
    VALUES (v_id, p_environment_id, p_project_id, p_task, v_status, v_queue, v_concurrency_key, p_payload::text, 'application/json',
      v_key, v_key, CASE WHEN v_key IS NOT NULL THEN p_now + make_interval(secs => v_key_ttl_ms / 1000) END, v_tags, o -> 'metadata',
      v_max_attempts, v_max_duration, v_ttl, v_expire, v_delay, CASE WHEN p_batch_id IS NULL THEN 'trigger' ELSE 'batchTrigger' END,
      p_batch_id, p_batch_index, v_test, p_now, p_now,
      v_plain, v_rate_key, v_held, v_gates, v_rate_limit, v_rate_period_ms,
      v_plain AND p_batch_id IS NULL AND v_status = 'QUEUED' AND v_expire IS NULL)
    ON CONFLICT (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
    IF FOUND THEN
      IF v_limits IS NOT NULL OR v_gates IS NOT NULL OR v_rate_limit IS NOT NULL THEN
        PERFORM pg_notify('svc_queues_changed', p_environment_id);
      END IF;
      IF cardinality(v_tags) > 0 THEN
        INSERT INTO run_tags (environment_id, tag, created_at, run_id) SELECT p_environment_id, t, p_now, v_id FROM unnest(v_tags) t;
      END IF;
      RETURN QUERY SELECT v_id, v_status, v_queue, false;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'idempotency key "%" of task % changed hands on every try', v_key, p_task;
END;
$$;
