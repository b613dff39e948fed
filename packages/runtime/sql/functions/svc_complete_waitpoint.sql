-- Completes (or times out) a waitpoint, first writer wins, in one round trip.
--
-- Two statements on purpose: the guarded UPDATE of the waitpoint waits behind a waiter that holds
-- it FOR SHARE while it records its wait; the ledger UPDATE then runs with a fresh snapshot (a
-- VOLATILE function takes one per statement under READ COMMITTED) and sees the row that waiter
-- committed. The NOTIFYs are delivered at COMMIT: runs resume if and only if the caller commits.
--
-- A run that a live worker of its task can take is offered to that worker (to one with a free
-- slot when any has one: workers.full_since, migration 0028) when the completion wakes at most
-- p_offers.maxRuns runs (almost every completion wakes one): claimed for it (EXECUTING, a fresh
-- claim token, the worker's own lease, which it renews as for any execution: svc_offer_worker
-- chooses the worker)
-- and returned, with its ledger, for the calling statement to announce on the
-- worker's own channel (SEND_OFFERS in engine/waitpoints/resume-offers.ts, which owns the offer's
-- shape: the run's claimed columns). The others are marked due (resume_due_at): from then on any
-- worker of their task claims them from `runs` (engine/runs/transitions/claim-ready.ts). Plain runs
-- are announced by id on p_resume_channel (a worker's fast path claims them by id); runs of queues
-- with a concurrencyLimit (NOT claim_from_runs: they take a slot of their queue, counted by their
-- queue's claim) wake their environment's workers on p_ready_channel.
-- p_offers is RESUME_OFFERS_PARAMETER (engine/waitpoints/resume-offers.ts).
--
-- Every run whose entries this call resolves gets its ledger_version raised by one (migration
-- 0026): a worker's in-memory copy of the ledger from before is then known to be behind.
--
-- A run offered to the worker that last suspended it (runs.suspended_worker_id; preferred when it
-- is live and has the run's task) is offered with only the entries this call resolved: that worker
-- keeps the ledger of the runs it suspended, and uses its copy when the copy's version is the one
-- this call started from (else it loads the ledger). Any other worker gets the whole ledger.
--
-- Returns whether this call changed the waitpoint, the runs it resumes, the waitpoint as it now
-- is (all NULL when there is no such waitpoint), and the runs it offered (as this call left them)
-- with their ledgers, in the same order: a ledger is `{ version, entries }` (the whole ledger) or
-- `{ version, resolved }` (the entries resolved here), `version` being the ledger's version with
-- this call's resolution, as read in this statement's snapshot (what the entries are consistent
-- with); NULL when the run's payload alone is over p_offers.maxPayloadBytes (the offer will carry
-- only its claim token).
CREATE OR REPLACE FUNCTION svc_complete_waitpoint(
  p_id text,
  p_status text,
  p_now timestamptz,
  p_output text,
  p_output_type text,
  p_output_is_error boolean,
  p_environment_id text,      -- NULL: any environment
  p_type text,                -- NULL: any type
  p_outcome jsonb,            -- what the ledger records for the waiting code
  p_resume_channel text,
  p_ready_channel text,
  p_offers jsonb              -- RESUME_OFFERS_PARAMETER: maxRuns, maxPayloadBytes, keyedEpoch
) RETURNS TABLE (changed boolean, resumed_run_ids text[], waitpoint waitpoints, offered_runs runs[], offered_ledgers json[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  w waitpoints;
  resumed text[];
  offer_runs runs[];
  offer_ledgers json[];
  offer_max_runs int := (p_offers->>'maxRuns')::int;
  offer_max_bytes int := (p_offers->>'maxPayloadBytes')::int;
  keyed_epoch int := (p_offers->>'keyedEpoch')::int;
  resolved_runs text[];
  offer_env text;
  offer_version text;
BEGIN
  UPDATE waitpoints SET status = p_status, completed_at = p_now, output = p_output,
         output_type = p_output_type, output_is_error = p_output_is_error
   WHERE id = p_id AND status = 'WAITING'
     AND (p_environment_id IS NULL OR environment_id = p_environment_id)
     AND (p_type IS NULL OR type = p_type)
  RETURNING * INTO w;
  IF NOT FOUND THEN
    SELECT * INTO w FROM waitpoints WHERE id = p_id AND (p_environment_id IS NULL OR environment_id = p_environment_id);
    RETURN QUERY SELECT false, '{}'::text[], w, NULL::runs[], NULL::json[];
    RETURN;
  END IF;

  WITH resolved AS (
    UPDATE run_ledger SET resolved = true, outcome = p_outcome, resolved_at = p_now
    WHERE waitpoint_id = p_id AND NOT resolved RETURNING *),
  waiting AS (
    SELECT r.id, r.environment_id, r.task_identifier, r.suspended_worker_id, NOT r.claim_from_runs AS limited
    FROM runs r
    WHERE r.id IN (SELECT run_id FROM resolved) AND r.status = 'WAITING'),
  chosen AS (
    -- One live worker of the run's task (svc_offer_worker): a worker with a free slot first, among
    -- those the one that suspended the run. Only when all are full, the one that suspended the
    -- run, else any: it gives the run back if it is still full (a free slot may have come since it
    -- said so), and the run is claimed from `runs`.
    SELECT waiting.id, pick.id AS worker_id, pick.version, pick.lease_ms
    FROM waiting CROSS JOIN LATERAL svc_offer_worker(waiting.environment_id, waiting.task_identifier, p_now, waiting.suspended_worker_id, false) pick
    -- A completion that wakes many runs at once (one token many runs wait on) announces them to
    -- all instead: each worker claims as many as it has slots for, in one statement, where offers
    -- would each cost a payload here and most would be given back by a worker already full.
    WHERE NOT waiting.limited AND (SELECT count(*) FROM waiting) <= offer_max_runs),
  marked AS (
    UPDATE runs r SET
      status = CASE WHEN chosen.id IS NULL THEN r.status ELSE 'EXECUTING' END,
      resume_due_at = CASE WHEN chosen.id IS NULL THEN p_now END,
      claim_token = CASE WHEN chosen.id IS NULL THEN r.claim_token ELSE gen_random_uuid()::text END,
      worker_id = coalesce(chosen.worker_id, r.worker_id),
      worker_version = coalesce(chosen.version, r.worker_version),
      lease_expires_at = CASE WHEN chosen.id IS NULL THEN r.lease_expires_at ELSE p_now + make_interval(secs => chosen.lease_ms / 1000.0) END,
      offered_at = CASE WHEN chosen.id IS NULL THEN NULL ELSE p_now END,
      updated_at = CASE WHEN chosen.id IS NULL THEN r.updated_at ELSE p_now END,
      ledger_version = r.ledger_version + 1
    FROM waiting LEFT JOIN chosen ON chosen.id = waiting.id
    WHERE r.id = waiting.id AND r.status = 'WAITING'
    RETURNING r.*, r AS run, waiting.limited, chosen.id IS NOT NULL AS offered),
  notified AS (
    -- ≤ 100 run ids per payload: `<environmentId> <waitpointId> <runId>,<runId>,…`
    SELECT pg_notify(p_resume_channel, environment_id || ' ' || p_id || ' ' || string_agg(id, ',' ORDER BY id)) FROM (
      SELECT id, environment_id, (row_number() OVER (PARTITION BY environment_id ORDER BY id) - 1) / 100 AS chunk
      FROM marked WHERE NOT limited AND NOT offered) c
    GROUP BY environment_id, chunk
    UNION ALL
    SELECT pg_notify(p_ready_channel, environment_id) FROM (SELECT DISTINCT environment_id FROM marked WHERE limited) l),
  offers AS (
    -- The ledger of each offered run, whose entries resolved here are only visible as this
    -- statement's own output; or, offered to the worker that suspended the run, only those. Its
    -- version is read in this statement's snapshot, as the entries are (`m` is the row as updated:
    -- a completion that committed meanwhile may have raised it already). NOTIFY payloads must stay
    -- under 8000 bytes: when the payload alone is too large, the ledger is not even serialised.
    SELECT array_agg(m.run ORDER BY m.id) AS run_rows, array_agg(CASE WHEN coalesce(octet_length(m.payload), 0) <= offer_max_bytes THEN
        CASE WHEN m.worker_id = m.suspended_worker_id THEN json_build_object('version', seen.ledger_version + 1, 'resolved', (
          SELECT json_agg(rr) FROM resolved rr WHERE rr.run_id = m.id AND rr.epoch IN (m.ledger_epoch, keyed_epoch)))
        ELSE json_build_object('version', seen.ledger_version + 1, 'entries', (
          SELECT json_agg(x) FROM (
            SELECT l.* FROM run_ledger l WHERE l.run_id = m.id AND l.epoch IN (m.ledger_epoch, keyed_epoch)
              AND NOT EXISTS (SELECT 1 FROM resolved rr WHERE rr.run_id = l.run_id AND rr.epoch = l.epoch AND rr.step_key = l.step_key)
            UNION ALL
            SELECT rr.* FROM resolved rr WHERE rr.run_id = m.id AND rr.epoch IN (m.ledger_epoch, keyed_epoch)) x)) END
      END ORDER BY m.id) AS ledgers
    FROM marked m CROSS JOIN LATERAL (SELECT s.ledger_version FROM runs s WHERE s.id = m.id) seen WHERE m.offered)
  SELECT coalesce(array_agg(marked.id ORDER BY marked.id), '{}'),
         (SELECT run_rows FROM offers), (SELECT ledgers FROM offers), (SELECT array_agg(DISTINCT run_id) FROM resolved)
  INTO resumed, offer_runs, offer_ledgers, resolved_runs
  FROM marked
  WHERE (SELECT count(*) FROM notified) >= 0;

  -- Runs whose entries resolved here without being resumed by it (not WAITING, or no longer when
  -- locked): their ledger changed all the same. Rare; a statement of its own, which sees the rows
  -- as the one above left them.
  IF resolved_runs IS NOT NULL AND NOT resolved_runs <@ resumed THEN
    UPDATE runs SET ledger_version = ledger_version + 1 WHERE id = ANY (resolved_runs) AND id <> ALL (resumed);
  END IF;

  -- Offered runs now carry their worker's version: keep that version's worker_versions.seen_until
  -- past this claim, as a worker's own claims do (engine/workers/worker-versions.ts). One UPDATE
  -- per version, by its key: the statement's cached plan serves every call. Joined to the unnest
  -- of the offered runs, it was planned anew at every completion (its generic plan, costed for
  -- ten array elements, never looked cheaper than one planned for the one run): 0.16 ms each.
  FOR offer_env, offer_version IN SELECT DISTINCT o.environment_id, o.worker_version FROM unnest(offer_runs) o LOOP
    UPDATE worker_versions SET seen_until = p_now + interval '1 minute'
    WHERE environment_id = offer_env AND version = offer_version AND seen_until < p_now + interval '30 seconds';
  END LOOP;

  RETURN QUERY SELECT true, resumed, w, offer_runs, offer_ledgers;
END;
$$;
