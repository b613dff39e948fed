-- Tenancy: organisations own projects; a project has four environments (dev, staging, prod,
-- preview) and preview branches are child environments of preview.
CREATE TABLE organizations (
  id         text PRIMARY KEY,
  slug       text NOT NULL UNIQUE,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id              text PRIMARY KEY,
  ref             text NOT NULL UNIQUE,          -- proj_…, what users see
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name            text NOT NULL,
  slug            text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, slug)
);

CREATE TABLE environments (
  id                    text PRIMARY KEY,        -- env_…; the `sub` of public JWTs
  project_id            text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  slug                  text NOT NULL CHECK (slug IN ('dev', 'staging', 'prod', 'preview')),
  type                  text NOT NULL CHECK (type IN ('DEVELOPMENT', 'STAGING', 'PRODUCTION', 'PREVIEW')),
  parent_environment_id text REFERENCES environments(id) ON DELETE CASCADE,
  branch_name           text,
  archived_at           timestamptz,
  created_at            timestamptz NOT NULL DEFAULT now(),
  CHECK ((parent_environment_id IS NULL) = (branch_name IS NULL))
);
CREATE UNIQUE INDEX environments_root ON environments (project_id, slug) WHERE parent_environment_id IS NULL;
CREATE UNIQUE INDEX environments_branch ON environments (parent_environment_id, branch_name) WHERE archived_at IS NULL;

-- Secret keys: looked up by SHA-256, kept recoverable (AES-256-GCM under the server key) because
-- public JWTs are HS256-signed with the raw key. Rotation adds a key; the old one gets expires_at.
CREATE TABLE secret_keys (
  id             bigserial PRIMARY KEY,
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  key_hash       text NOT NULL UNIQUE,
  key_encrypted  text NOT NULL,
  key_preview    text NOT NULL,                  -- e.g. svc_dev_…a1b2, safe to show and log
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz
);
CREATE INDEX secret_keys_environment ON secret_keys (environment_id);

CREATE TABLE users (
  id         text PRIMARY KEY,
  email      text NOT NULL UNIQUE,
  name       text,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE project_members (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id    text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, user_id)
);

CREATE TABLE organization_members (
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id         text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, user_id)
);

CREATE TABLE personal_access_tokens (
  id           bigserial PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         text NOT NULL,
  token_hash   text NOT NULL UNIQUE,             -- PATs are never needed in the clear again
  token_preview text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);

-- The tasks each environment's workers have registered.
CREATE TABLE worker_tasks (
  environment_id  text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  task_identifier text NOT NULL,
  queue_name      text NOT NULL,
  concurrency_limit integer,
  retry           jsonb,
  max_duration_s  integer,
  kind            text NOT NULL DEFAULT 'STANDARD',
  worker_version  text NOT NULL,
  registered_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, task_identifier)
);

-- Large payloads and outputs (the SDK offloads >= 128 KiB through PUT /api/v2/packets/{file}).
CREATE TABLE packets (
  environment_id text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  path           text NOT NULL,
  content_type   text NOT NULL,
  data           bytea,
  upload_token   text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, path)
);

CREATE TABLE batches (
  id               text PRIMARY KEY,
  environment_id   text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  run_count        integer NOT NULL,
  idempotency_key  text,
  idempotency_key_user text,
  parent_run_id    text,
  resume_parent_on_completion boolean NOT NULL DEFAULT false,
  sealed_at        timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX batches_idempotency ON batches (environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Runs, in Trigger.dev's status vocabulary. Every change is a guarded UPDATE (engine/runs).
CREATE TABLE runs (
  id                 text PRIMARY KEY,
  environment_id     text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  project_id         text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  task_identifier    text NOT NULL,
  status             text NOT NULL CHECK (status IN ('PENDING_VERSION', 'QUEUED', 'DEQUEUED', 'EXECUTING',
                       'WAITING', 'COMPLETED', 'CANCELED', 'FAILED', 'CRASHED', 'SYSTEM_FAILURE', 'DELAYED',
                       'EXPIRED', 'TIMED_OUT')),
  queue_name         text NOT NULL,
  concurrency_key    text,
  payload            text,
  payload_type       text NOT NULL DEFAULT 'application/json',
  output             text,
  output_type        text,
  error              jsonb,
  idempotency_key    text,                       -- as sent (the SDK sends a SHA-256); NULL once freed
  idempotency_key_user text,                     -- the user's original key, returned on retrieve
  idempotency_key_expires_at timestamptz,
  tags               text[] NOT NULL DEFAULT '{}',
  metadata           jsonb,
  max_attempts       integer,
  max_duration_s     integer,
  ttl                text,
  expire_at          timestamptz,                -- not started by then → EXPIRED
  delay_until        timestamptz,                -- DELAYED until then
  available_at       timestamptz,                -- QUEUED for a retry: not before then
  attempt_number     integer NOT NULL DEFAULT 0,
  ledger_epoch       integer NOT NULL DEFAULT 0, -- bumped when a failed attempt is retried
  claim_token        text,                       -- fences the worker execution that owns the run
  job_id             text,                       -- the pg-boss job that carries the current dispatch
  worker_id          text,
  worker_version     text,
  parent_run_id      text REFERENCES runs(id) ON DELETE SET NULL,
  root_run_id        text,
  depth              integer NOT NULL DEFAULT 0,
  trigger_function   text NOT NULL DEFAULT 'trigger',
  batch_id           text REFERENCES batches(id) ON DELETE SET NULL,
  batch_index        integer,
  schedule_id        text,
  is_test            boolean NOT NULL DEFAULT false,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  started_at         timestamptz,
  finished_at        timestamptz,
  expired_at         timestamptz
);
CREATE UNIQUE INDEX runs_idempotency ON runs (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_list ON runs (environment_id, created_at DESC, id DESC);
CREATE INDEX runs_tags ON runs USING gin (tags);
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_batch ON runs (batch_id, batch_index) WHERE batch_id IS NOT NULL;
CREATE INDEX runs_delayed ON runs (delay_until) WHERE status = 'DELAYED';
CREATE INDEX runs_expiring ON runs (expire_at) WHERE status IN ('QUEUED', 'DELAYED') AND expire_at IS NOT NULL;
CREATE INDEX runs_retrying ON runs (available_at) WHERE status = 'QUEUED' AND available_at IS NOT NULL;

CREATE TABLE run_attempts (
  run_id       text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  number       integer NOT NULL,
  status       text NOT NULL CHECK (status IN ('EXECUTING', 'COMPLETED', 'FAILED', 'CRASHED', 'CANCELED', 'TIMED_OUT')),
  worker_id    text,
  worker_version text,
  error        jsonb,
  retry_at     timestamptz,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  PRIMARY KEY (run_id, number)
);
