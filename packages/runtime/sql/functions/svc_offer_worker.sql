-- Which worker a run is offered to: the one place that chooses (start offers,
-- engine/runs/transitions/offer-start.ts; resume offers, svc_complete_waitpoint). One live worker of
-- the run's task (`p_task`) in its environment whose LISTEN connection still holds the lock its
-- registry row names (it is there to hear the offer; when the lock is free, this transaction holds
-- it shared until it ends, which is harmless), a worker with a free slot first (workers.full_since
-- NULL, migration 0028), among those `p_prefer` (the worker that suspended a resumed run: its copy
-- of the ledger spares the offer the whole ledger), else one at random. With `p_free_only`, no
-- worker when all are full. Returns the worker, its version and its lease in ms (the offer's lease).
--
-- STABLE although it takes an advisory lock and draws random(): only a function that is not
-- VOLATILE is inlined into the calling statement (planned with it, once), where a VOLATILE one
-- would be planned and run apart on every call; the lock and the draw are evaluated as they would
-- be written inline.
CREATE OR REPLACE FUNCTION svc_offer_worker(p_environment_id text, p_task text, p_now timestamptz, p_prefer text, p_free_only boolean)
RETURNS TABLE (id text, version text, lease_ms integer)
LANGUAGE sql STABLE AS $$
  SELECT wk.id, wk.version, coalesce(wk.lease_ms, 15000) FROM workers wk
  WHERE wk.environment_id = p_environment_id AND p_task = ANY (wk.tasks) AND wk.alive_until > p_now
    AND (NOT p_free_only OR wk.full_since IS NULL)
    AND NOT pg_try_advisory_xact_lock_shared(wk.listener_lock)
  ORDER BY wk.full_since IS NULL DESC, wk.id IS NOT DISTINCT FROM p_prefer DESC, random()
  LIMIT 1
$$;
