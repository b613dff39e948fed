-- Gates (docs/queues-and-concurrency.md, issue 34 §4): a trigger's `gates: [{ queue, concurrencyKey? }]`
-- (at most three) names other queues the run must also fit in while it executes. A gate's pool is
-- the gate queue's concurrency key `concurrencyKey` (no key: the queue's runs without one), and its
-- bound is that queue's concurrencyLimit as svc_queue_limit gives it (an override, else the declared
-- one). A pool holds the gate queue's own EXECUTING runs of that key and the EXECUTING runs of any
-- queue gated on it; a paused gate queue starts no run gated on it. A gate naming a queue that has no
-- limit (or that svc does not know) gates nothing.
--
-- A gated run is always claimed by its own queue's limited claim (runs.claim_from_runs false), which
-- holds the gate queues' locks too (CLAIM_LIMITED_SQL, engine/runs/transitions/claim-ready.ts;
-- engine/runs/gate-sql.ts). Plain runs are as before: `gates` is NULL.
ALTER TABLE runs ADD COLUMN gates jsonb;

-- What every limited claim counts for its queue besides its own runs: the environment's executing
-- runs that are gated (on this queue or another).
CREATE INDEX runs_gated_executing ON runs (environment_id)
  WHERE status = 'EXECUTING' AND gates IS NOT NULL;
-- What a worker reads to learn which of its queues have gated runs (queuesWithGatedRuns): their
-- claims take the gate queues' locks.
CREATE INDEX runs_gated_live ON runs (environment_id, queue_name)
  WHERE gates IS NOT NULL AND list_status = 'LIVE';
