-- Named concurrency limits (docs/queues-and-concurrency.md, issue 34 §4): a limit a run holds by
-- name (its trigger's `concurrency: ["name", …]`, at most two), shared by runs of any task and any
-- queue of the environment. `per_key` caps each concurrency key's executing runs (runs without a
-- key share one pool), `total` every executing run holding the limit. An operator sets them (the
-- concurrency-limits API: there is no declaration in task code yet, so the `per_key`/`total`
-- columns, the declared bounds, stay NULL), overrides them until a reset, or pauses the limit.
-- A name with no row, or no bound, limits nothing, but its runs are still claimed by the limited
-- claim (runs.claim_from_runs false), so that a limit set later holds for them at once.
CREATE TABLE concurrency_limits (
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- What the API names it by (`climit_…`), besides its name.
  id text NOT NULL DEFAULT 'climit_' || replace(gen_random_uuid()::text, '-', ''),
  per_key integer CHECK (per_key >= 1),
  total integer CHECK (total >= 1),
  per_key_override integer CHECK (per_key_override >= 0),
  total_override integer CHECK (total_override >= 0),
  overridden_at timestamptz,
  paused boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, name),
  UNIQUE (environment_id, id)
);

-- A temporary cap on one concurrency key's pool of a limit (replaces its per_key until expires_at,
-- or until a reset with the key).
CREATE TABLE concurrency_limit_keys (
  environment_id text NOT NULL,
  name text NOT NULL,
  concurrency_key text NOT NULL,
  per_key integer NOT NULL CHECK (per_key >= 0),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, name, concurrency_key),
  FOREIGN KEY (environment_id, name) REFERENCES concurrency_limits (environment_id, name) ON DELETE CASCADE
);

-- The named limits a run holds (NULL: none, every plain run).
ALTER TABLE runs ADD COLUMN concurrency_limits text[];

-- What a claim of named-limit runs counts: the environment's executing runs that hold a limit.
CREATE INDEX runs_named_executing ON runs (environment_id)
  WHERE status = 'EXECUTING' AND concurrency_limits IS NOT NULL;
-- What a worker reads to learn which of its queues have runs holding a named limit
-- (queuesWithNamedLimitRuns), and what a limit's `queued` count reads.
CREATE INDEX runs_named_live ON runs (environment_id, queue_name)
  WHERE concurrency_limits IS NOT NULL AND list_status = 'LIVE';
