-- Triggers a batch inside the caller's transaction, as svc_trigger does one run: `p_items` is a JSON
-- array of 1 to 1,000 `{ "task", "payload", "options" }` (options as svc_trigger's), `p_options`
-- may hold the batch's `idempotencyKey` (the same key returns the batch that holds it, isCached).
-- One sealed batch row and one run per item (batch_index in item order), all or none: a bad item
-- raises invalid_parameter_value naming it ("item 3 (task t): …"). Returns the batch id and the run
-- ids in item order.
CREATE OR REPLACE FUNCTION svc_batch_trigger(p_environment text, p_items jsonb, p_options jsonb DEFAULT NULL)
RETURNS TABLE (batch_id text, run_ids text[], is_cached boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_env record;
  v_now timestamptz := clock_timestamp();
  v_key text;
  v_batch_id text;
  v_item record;
  v_current record;
  v_run record;
  v_ids text[] := '{}';
  v_queued boolean := false;
  v_delayed boolean := false;
  v_message text;
BEGIN
  SELECT * INTO v_env FROM svc_trigger_environment(p_environment);
  IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' OR jsonb_array_length(p_items) NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'items: must be an array of 1 to 1000 items';
  END IF;
  IF p_options IS NOT NULL AND jsonb_typeof(p_options) = 'object' AND p_options ? 'idempotencyKey' THEN
    v_key := p_options ->> 'idempotencyKey';
    IF jsonb_typeof(p_options -> 'idempotencyKey') <> 'string' OR v_key = '' THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options.idempotencyKey: must be a non-empty string';
    END IF;
  ELSIF p_options IS NOT NULL AND (jsonb_typeof(p_options) <> 'object' OR EXISTS (SELECT 1 FROM jsonb_object_keys(p_options))) THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'options: a batch takes only { "idempotencyKey" }';
  END IF;

  v_batch_id := svc_time_ordered_id('batch_', v_now);
  INSERT INTO batches (id, environment_id, run_count, idempotency_key, idempotency_key_user, sealed_at, created_at)
  VALUES (v_batch_id, v_env.environment_id, jsonb_array_length(p_items), v_key, v_key, v_now, v_now)
  ON CONFLICT (environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
  IF NOT FOUND THEN
    SELECT b.id INTO v_batch_id FROM batches b WHERE b.environment_id = v_env.environment_id AND b.idempotency_key = v_key;
    RETURN QUERY SELECT v_batch_id, coalesce(array_agg(r.id ORDER BY r.batch_index), '{}'), true
      FROM runs r WHERE r.batch_id = v_batch_id AND r.environment_id = v_env.environment_id;
    RETURN;
  END IF;

  -- One exception block around the loop (one subtransaction, not one per item) names the item that failed.
  BEGIN
    FOR v_item IN SELECT e.value AS item, e.ordinality - 1 AS index FROM jsonb_array_elements(p_items) WITH ORDINALITY e LOOP
      v_current := v_item;
      IF jsonb_typeof(v_item.item) <> 'object' OR jsonb_typeof(v_item.item -> 'task') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'must be an object with "task" (a task id), "payload" and "options"';
      END IF;
      SELECT * INTO v_run FROM svc_trigger_run(v_env.environment_id, v_env.project_id, v_item.item ->> 'task', v_item.item -> 'payload',
        v_item.item -> 'options', v_batch_id, v_item.index::integer, v_now);
      v_ids := v_ids || v_run.run_id;
      IF NOT v_run.is_cached THEN
        v_queued := v_queued OR v_run.run_status = 'QUEUED';
        v_delayed := v_delayed OR v_run.run_status = 'DELAYED';
      END IF;
    END LOOP;
  EXCEPTION WHEN invalid_parameter_value THEN
    GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT;
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('item %s%s: %s', v_current.index, coalesce(' (task ' || (v_current.item ->> 'task') || ')', ''), v_message);
  END;
  IF v_queued THEN PERFORM pg_notify('svc_runs_ready', v_env.environment_id); END IF;
  IF v_delayed THEN PERFORM pg_notify('svc_timers', ''); END IF;
  RETURN QUERY SELECT v_batch_id, v_ids, false;
END;
$$;
