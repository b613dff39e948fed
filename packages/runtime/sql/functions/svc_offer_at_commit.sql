-- At the COMMIT of a transaction that triggered a run with svc_trigger (runs.offer_at_commit, the
-- deferred constraint trigger runs_offer_at_commit, migration 0052): offers the run's first attempt
-- to a live worker of its task with a free slot, already claimed, on that worker's own channel —
-- what a trigger over HTTP does in its INSERT (engine/runs/transitions/offer-start.ts, whose row
-- state and NOTIFY this writes; packages/worker/test/trigger-in-transaction.test.ts holds the two
-- together). The worker hears it once the commit is done and starts the code without a claim
-- statement. With no such worker, or a run that changed meanwhile, every worker of the environment
-- is told instead (svc_runs_ready), as before this function existed.
--
-- Only under READ COMMITTED: a REPEATABLE READ or SERIALIZABLE transaction would choose a worker
-- from its first snapshot, and its reads of `workers` could fail the caller's own COMMIT with a
-- serialization error; such a transaction wakes the workers instead. The lease is measured from
-- now (clock_timestamp(), at the commit), never from the transaction's start.
CREATE OR REPLACE FUNCTION svc_offer_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
  v_offer record;
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    UPDATE runs r SET status = 'EXECUTING', attempt_number = r.attempt_number + 1, claim_token = gen_random_uuid()::text,
        worker_id = w.id, worker_version = w.version, lease_expires_at = v_now + make_interval(secs => w.lease_ms / 1000.0),
        offered_at = v_now, offered_start = true, started_at = v_now, updated_at = v_now, offer_at_commit = false
      FROM svc_offer_worker(NEW.environment_id, NEW.task_identifier, v_now, NULL, true) w
      WHERE r.id = NEW.id AND r.environment_id = NEW.environment_id AND r.status = 'QUEUED' AND r.claim_from_runs
        AND r.available_at IS NULL AND r.expire_at IS NULL AND r.ledger_epoch = 0 AND r.worker_id IS NULL
      RETURNING r.worker_id, r.worker_version, r.claim_token, r.id, r.payload,
        json_build_object('run', json_build_object(
          'id', r.id, 'environment_id', r.environment_id, 'task_identifier', r.task_identifier, 'queue_name', r.queue_name,
          'payload', r.payload, 'payload_type', r.payload_type, 'attempt_number', r.attempt_number, 'ledger_epoch', r.ledger_epoch,
          'max_attempts', r.max_attempts, 'max_duration_s', r.max_duration_s, 'tags', r.tags, 'is_test', r.is_test,
          'idempotency_key_user', r.idempotency_key_user, 'idempotency_key_scope', r.idempotency_key_scope, 'batch_id', r.batch_id,
          'trigger_function', r.trigger_function, 'created_at', r.created_at, 'updated_at', r.updated_at, 'claim_token', r.claim_token,
          'traceparent', r.traceparent, 'wait_traceparent', r.wait_traceparent, 'metadata', r.metadata,
          'metadata_ops_epoch', r.metadata_ops_epoch, 'metadata_ops', r.metadata_ops, 'parent_run_id', r.parent_run_id),
          'ledger', NULL, 'start', true)::text AS claim
      INTO v_offer;
    IF FOUND THEN
      -- As offer-start.ts's SEND_START_OFFER: an offer too large for a NOTIFY carries its claim token.
      PERFORM pg_notify('svc_offers_' || v_offer.worker_id,
        CASE WHEN octet_length(v_offer.claim) <= 7900 THEN v_offer.claim
             ELSE json_build_object('claimToken', v_offer.claim_token, 'runId', v_offer.id)::text END);
      -- As a worker's own claim does (engine/workers/worker-versions.ts).
      UPDATE worker_versions v SET seen_until = v_now + interval '1 minute'
        WHERE v.environment_id = NEW.environment_id AND v.version = v_offer.worker_version AND v.seen_until < v_now + interval '30 seconds';
      RETURN NULL;
    END IF;
  END IF;
  PERFORM pg_notify('svc_runs_ready', NEW.environment_id);
  RETURN NULL;
END;
$$;
