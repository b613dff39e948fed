-- The limited claim (CLAIM_LIMITED_SQL, engine/runs/transitions/claim-ready.ts) reads only the head
-- of its queue when a limit binds and no ready run has a concurrency key; this index answers "no
-- ready run has a key" in one probe, where reading the claim's 1,000-run window did (1.5-1.7x the
-- plain claim). It holds the ready runs of limited queues that have a key: none in a queue that
-- uses no keys.
CREATE INDEX runs_limited_ready_keyed ON runs (environment_id, queue_name)
  WHERE NOT claim_from_runs AND concurrency_key <> ''
    AND ((status = 'QUEUED' AND available_at IS NULL) OR (status = 'WAITING' AND resume_due_at IS NOT NULL));
