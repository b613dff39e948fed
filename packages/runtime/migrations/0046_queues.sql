-- Queues an operator can control (issue 34 §4): pause one, or override its concurrencyLimit until
-- a reset puts back the one its tasks declare. A row per queue a worker registered a task on
-- (registerTasks) or an operator changed; a queue with no row is as its tasks declare it.
--
-- A queue that is paused or overridden counts as limited (svc_queue_is_limited): its runs are
-- claimed only by the queue's own claim (CLAIM_LIMITED_SQL), which takes its limit from
-- svc_queue_limit and starts nothing while the queue is paused. The plain claim is unchanged.
CREATE TABLE queues (
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- What the API names it by (`queue_…`), besides its name.
  id text NOT NULL DEFAULT 'queue_' || replace(gen_random_uuid()::text, '-', ''),
  paused boolean NOT NULL DEFAULT false,
  -- Replaces the declared concurrencyLimit until a reset; 0 starts nothing, as a pause.
  concurrency_limit_override integer CHECK (concurrency_limit_override >= 0),
  overridden_at timestamptz,
  overridden_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, name),
  UNIQUE (environment_id, id)
);

-- What the trigger's INSERT and svc_queue_is_limited look for: only the queues someone controls.
CREATE INDEX queues_controlled ON queues (environment_id, name) WHERE paused OR concurrency_limit_override IS NOT NULL;

-- The queues registered so far.
INSERT INTO queues (environment_id, name)
  SELECT DISTINCT environment_id, queue_name FROM worker_tasks
  ON CONFLICT DO NOTHING;
