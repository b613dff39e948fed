-- The net schema of a freshly migrated svc database: generated from its catalog by
-- `pnpm schema:dump` (packages/runtime/src/db/schema-dump.ts). Do not edit; regenerate and commit it
-- with every migration or function file change. packages/runtime/test/schema-dump.test.ts fails
-- when it is out of date. For reading and review diffs only: not a restorable dump.

CREATE TABLE batch_members (
    batch_id text NOT NULL,
    batch_index integer NOT NULL,
    run_id text NOT NULL,
    CONSTRAINT batch_members_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES batches(id) ON DELETE CASCADE,
    CONSTRAINT batch_members_pkey PRIMARY KEY (batch_id, batch_index)
);
CREATE INDEX batch_members_run ON public.batch_members USING btree (run_id);

CREATE TABLE batches (
    id text NOT NULL,
    environment_id text NOT NULL,
    run_count integer NOT NULL,
    idempotency_key text,
    idempotency_key_user text,
    parent_run_id text,
    resume_parent_on_completion boolean DEFAULT false NOT NULL,
    sealed_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    one_time_use_token text,
    CONSTRAINT batches_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT batches_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX batches_idempotency ON public.batches USING btree (environment_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE UNIQUE INDEX batches_one_time_use_token ON public.batches USING btree (one_time_use_token) WHERE (one_time_use_token IS NOT NULL);

CREATE TABLE bulk_action_runs (
    environment_id text NOT NULL,
    bulk_action_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    CONSTRAINT bulk_action_runs_environment_id_bulk_action_id_fkey FOREIGN KEY (environment_id, bulk_action_id) REFERENCES bulk_actions(environment_id, id) ON DELETE CASCADE,
    CONSTRAINT bulk_action_runs_pkey PRIMARY KEY (environment_id, bulk_action_id, created_at, run_id),
    CONSTRAINT bulk_action_runs_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE
);
CREATE INDEX bulk_action_runs_run ON public.bulk_action_runs USING btree (run_id);

CREATE TABLE bulk_actions (
    id text NOT NULL,
    environment_id text NOT NULL,
    name text,
    action text NOT NULL,
    status text DEFAULT 'PENDING'::text NOT NULL,
    filters jsonb,
    run_ids text[],
    cursor_created_at timestamp with time zone,
    cursor_run_id text,
    total integer NOT NULL,
    succeeded integer DEFAULT 0 NOT NULL,
    failed integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT bulk_actions_action_check CHECK ((action = ANY (ARRAY['CANCEL'::text, 'REPLAY'::text]))),
    CONSTRAINT bulk_actions_check CHECK (((filters IS NULL) <> (run_ids IS NULL))),
    CONSTRAINT bulk_actions_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT bulk_actions_environment_id_id_key UNIQUE (environment_id, id),
    CONSTRAINT bulk_actions_pkey PRIMARY KEY (id),
    CONSTRAINT bulk_actions_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'COMPLETED'::text, 'ABORTED'::text])))
);
CREATE INDEX bulk_actions_list ON public.bulk_actions USING btree (environment_id, created_at DESC, id DESC);
CREATE INDEX bulk_actions_pending ON public.bulk_actions USING btree (updated_at) WHERE (status = 'PENDING'::text);

CREATE TABLE concurrency_limit_keys (
    environment_id text NOT NULL,
    name text NOT NULL,
    concurrency_key text NOT NULL,
    per_key integer NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT concurrency_limit_keys_environment_id_name_fkey FOREIGN KEY (environment_id, name) REFERENCES concurrency_limits(environment_id, name) ON DELETE CASCADE,
    CONSTRAINT concurrency_limit_keys_per_key_check CHECK ((per_key >= 0)),
    CONSTRAINT concurrency_limit_keys_pkey PRIMARY KEY (environment_id, name, concurrency_key)
);

CREATE TABLE concurrency_limits (
    environment_id text NOT NULL,
    name text NOT NULL,
    id text DEFAULT ('climit_'::text || replace((gen_random_uuid())::text, '-'::text, ''::text)) NOT NULL,
    per_key integer,
    total integer,
    per_key_override integer,
    total_override integer,
    overridden_at timestamp with time zone,
    paused boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT concurrency_limits_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT concurrency_limits_environment_id_id_key UNIQUE (environment_id, id),
    CONSTRAINT concurrency_limits_per_key_check CHECK ((per_key >= 1)),
    CONSTRAINT concurrency_limits_per_key_override_check CHECK ((per_key_override >= 0)),
    CONSTRAINT concurrency_limits_pkey PRIMARY KEY (environment_id, name),
    CONSTRAINT concurrency_limits_total_check CHECK ((total >= 1)),
    CONSTRAINT concurrency_limits_total_override_check CHECK ((total_override >= 0))
);

CREATE TABLE dashboard_sessions (
    token_hash text NOT NULL,
    user_id text NOT NULL,
    personal_access_token_id bigint NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT dashboard_sessions_personal_access_token_id_fkey FOREIGN KEY (personal_access_token_id) REFERENCES personal_access_tokens(id) ON DELETE CASCADE,
    CONSTRAINT dashboard_sessions_pkey PRIMARY KEY (token_hash),
    CONSTRAINT dashboard_sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
);
CREATE INDEX dashboard_sessions_expiry ON public.dashboard_sessions USING btree (expires_at);
CREATE INDEX dashboard_sessions_pat ON public.dashboard_sessions USING btree (personal_access_token_id);

CREATE TABLE environment_variables (
    environment_id text NOT NULL,
    name text NOT NULL,
    value_encrypted text NOT NULL,
    is_secret boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT environment_variables_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT environment_variables_pkey PRIMARY KEY (environment_id, name)
);

CREATE TABLE environments (
    id text NOT NULL,
    project_id text NOT NULL,
    slug text NOT NULL,
    type text NOT NULL,
    parent_environment_id text,
    branch_name text,
    archived_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    run_retention_days integer,
    CONSTRAINT environments_check CHECK (((parent_environment_id IS NULL) = (branch_name IS NULL))),
    CONSTRAINT environments_parent_environment_id_fkey FOREIGN KEY (parent_environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT environments_pkey PRIMARY KEY (id),
    CONSTRAINT environments_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id) ON DELETE CASCADE,
    CONSTRAINT environments_run_retention_days_check CHECK ((run_retention_days >= 0)),
    CONSTRAINT environments_slug_check CHECK ((slug = ANY (ARRAY['dev'::text, 'staging'::text, 'prod'::text, 'preview'::text]))),
    CONSTRAINT environments_type_check CHECK ((type = ANY (ARRAY['DEVELOPMENT'::text, 'STAGING'::text, 'PRODUCTION'::text, 'PREVIEW'::text])))
);
CREATE UNIQUE INDEX environments_branch ON public.environments USING btree (parent_environment_id, branch_name) WHERE (archived_at IS NULL);
CREATE UNIQUE INDEX environments_root ON public.environments USING btree (project_id, slug) WHERE (parent_environment_id IS NULL);
CREATE TRIGGER environments_changed AFTER DELETE OR UPDATE OR TRUNCATE ON public.environments FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_credentials_changed();

CREATE TABLE organization_members (
    organization_id text NOT NULL,
    user_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT organization_members_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
    CONSTRAINT organization_members_pkey PRIMARY KEY (organization_id, user_id),
    CONSTRAINT organization_members_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
);
CREATE INDEX organization_members_user ON public.organization_members USING btree (user_id);

CREATE TABLE organizations (
    id text NOT NULL,
    slug text NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT organizations_pkey PRIMARY KEY (id),
    CONSTRAINT organizations_slug_key UNIQUE (slug)
);

CREATE TABLE packets (
    environment_id text NOT NULL,
    path text NOT NULL,
    content_type text NOT NULL,
    data bytea,
    upload_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    upload_expires_at timestamp with time zone NOT NULL,
    uploaded_at timestamp with time zone,
    CONSTRAINT packets_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT packets_pkey PRIMARY KEY (environment_id, path)
);
CREATE INDEX packets_created ON public.packets USING btree (environment_id, created_at, path) WHERE (data IS NOT NULL);
CREATE INDEX packets_unuploaded_expiry ON public.packets USING btree (upload_expires_at) WHERE (data IS NULL);

CREATE TABLE personal_access_tokens (
    id bigint DEFAULT nextval('personal_access_tokens_id_seq'::regclass) NOT NULL,
    user_id text NOT NULL,
    name text NOT NULL,
    token_hash text NOT NULL,
    token_preview text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT personal_access_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT personal_access_tokens_token_hash_key UNIQUE (token_hash),
    CONSTRAINT personal_access_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
);
CREATE INDEX personal_access_tokens_user ON public.personal_access_tokens USING btree (user_id);

CREATE TABLE project_members (
    project_id text NOT NULL,
    user_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT project_members_pkey PRIMARY KEY (project_id, user_id),
    CONSTRAINT project_members_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id) ON DELETE CASCADE,
    CONSTRAINT project_members_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
);
CREATE INDEX project_members_user ON public.project_members USING btree (user_id);

CREATE TABLE projects (
    id text NOT NULL,
    ref text NOT NULL,
    organization_id text NOT NULL,
    name text NOT NULL,
    slug text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT projects_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE,
    CONSTRAINT projects_organization_id_slug_key UNIQUE (organization_id, slug),
    CONSTRAINT projects_pkey PRIMARY KEY (id),
    CONSTRAINT projects_ref_key UNIQUE (ref)
);

CREATE TABLE queues (
    environment_id text NOT NULL,
    name text NOT NULL,
    id text DEFAULT ('queue_'::text || replace((gen_random_uuid())::text, '-'::text, ''::text)) NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    concurrency_limit_override integer,
    overridden_at timestamp with time zone,
    overridden_by text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    runs_limited boolean,
    CONSTRAINT queues_concurrency_limit_override_check CHECK ((concurrency_limit_override >= 0)),
    CONSTRAINT queues_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT queues_environment_id_id_key UNIQUE (environment_id, id),
    CONSTRAINT queues_pkey PRIMARY KEY (environment_id, name)
);
CREATE INDEX queues_controlled ON public.queues USING btree (environment_id, name) WHERE (paused OR (concurrency_limit_override IS NOT NULL));
CREATE TRIGGER queues_side_controlled BEFORE UPDATE OF paused, concurrency_limit_override ON public.queues FOR EACH ROW WHEN (((old.paused IS DISTINCT FROM new.paused) OR (old.concurrency_limit_override IS DISTINCT FROM new.concurrency_limit_override))) EXECUTE FUNCTION svc_queue_side_changed();

CREATE TABLE rate_limit_windows (
    environment_id text NOT NULL,
    queue_name text NOT NULL,
    rate_key text NOT NULL,
    started_at timestamp with time zone[] NOT NULL,
    started_n integer[] NOT NULL,
    period_ms integer NOT NULL,
    CONSTRAINT rate_limit_windows_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT rate_limit_windows_period_check CHECK ((period_ms > 0)),
    CONSTRAINT rate_limit_windows_pkey PRIMARY KEY (environment_id, queue_name, rate_key, period_ms)
);

CREATE TABLE realtime_watches (
    environment_id text NOT NULL,
    watcher text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT realtime_watches_pkey PRIMARY KEY (environment_id, watcher)
);

CREATE TABLE retention_sweeps (
    environment_id text NOT NULL,
    due_at timestamp with time zone NOT NULL,
    swept_at timestamp with time zone,
    last_deleted jsonb,
    deleted_runs bigint DEFAULT 0 NOT NULL,
    CONSTRAINT retention_sweeps_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT retention_sweeps_pkey PRIMARY KEY (environment_id)
);

CREATE TABLE run_attempts (
    run_id text NOT NULL,
    number integer NOT NULL,
    status text NOT NULL,
    worker_id text,
    worker_version text,
    error jsonb,
    retry_at timestamp with time zone,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT run_attempts_pkey PRIMARY KEY (run_id, number),
    CONSTRAINT run_attempts_status_check CHECK ((status = ANY (ARRAY['EXECUTING'::text, 'COMPLETED'::text, 'FAILED'::text, 'CRASHED'::text, 'CANCELED'::text, 'TIMED_OUT'::text])))
);

CREATE TABLE run_input_waits (
    waitpoint_id text NOT NULL,
    environment_id text NOT NULL,
    run_id text NOT NULL,
    stream_key text NOT NULL,
    after_seq bigint NOT NULL,
    CONSTRAINT run_input_waits_pkey PRIMARY KEY (waitpoint_id),
    CONSTRAINT run_input_waits_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE,
    CONSTRAINT run_input_waits_waitpoint_id_fkey FOREIGN KEY (waitpoint_id) REFERENCES waitpoints(id) ON DELETE CASCADE
);
CREATE INDEX run_input_waits_stream ON public.run_input_waits USING btree (run_id, stream_key, after_seq);

CREATE TABLE run_ledger (
    run_id text NOT NULL,
    epoch integer NOT NULL,
    step_key text NOT NULL,
    kind text NOT NULL,
    target text,
    waitpoint_id text,
    resolved boolean DEFAULT false NOT NULL,
    outcome jsonb,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    resolved_at timestamp with time zone,
    used_epoch integer,
    CONSTRAINT run_ledger_kind_check CHECK ((kind = ANY (ARRAY['token'::text, 'datetime'::text, 'child'::text, 'batch'::text, 'step'::text, 'session'::text]))),
    CONSTRAINT run_ledger_pkey PRIMARY KEY (run_id, epoch, step_key),
    CONSTRAINT run_ledger_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE
);
CREATE INDEX run_ledger_waiting ON public.run_ledger USING btree (waitpoint_id) WHERE (NOT resolved);

CREATE TABLE run_log_totals (
    run_id text NOT NULL,
    environment_id text NOT NULL,
    lines integer DEFAULT 0 NOT NULL,
    bytes bigint DEFAULT 0 NOT NULL,
    dropped integer DEFAULT 0 NOT NULL,
    CONSTRAINT run_log_totals_pkey PRIMARY KEY (run_id)
);

CREATE TABLE run_logs (
    environment_id text NOT NULL,
    run_id text NOT NULL,
    seq integer NOT NULL,
    attempt integer NOT NULL,
    level text NOT NULL,
    message text NOT NULL,
    attributes jsonb,
    logged_at timestamp with time zone NOT NULL,
    source text NOT NULL,
    step text,
    ledger_epoch integer,
    ledger_key text,
    CONSTRAINT run_logs_level_check CHECK ((level = ANY (ARRAY['debug'::text, 'log'::text, 'info'::text, 'warn'::text, 'error'::text]))),
    CONSTRAINT run_logs_pkey PRIMARY KEY (run_id, seq),
    CONSTRAINT run_logs_source_check CHECK ((source = ANY (ARRAY['logger'::text, 'console'::text, 'svc'::text])))
);

CREATE TABLE run_stream_records (
    environment_id text NOT NULL,
    run_id text NOT NULL,
    io text NOT NULL,
    stream_key text NOT NULL,
    seq bigint NOT NULL,
    part_id text NOT NULL,
    data text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT run_stream_records_pkey PRIMARY KEY (run_id, io, stream_key, seq),
    CONSTRAINT run_stream_records_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX run_stream_records_part ON public.run_stream_records USING btree (run_id, io, stream_key, part_id);

CREATE TABLE run_streams (
    environment_id text NOT NULL,
    run_id text NOT NULL,
    io text NOT NULL,
    stream_key text NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT run_streams_io_check CHECK ((io = ANY (ARRAY['out'::text, 'in'::text]))),
    CONSTRAINT run_streams_pkey PRIMARY KEY (run_id, io, stream_key),
    CONSTRAINT run_streams_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE
);

CREATE TABLE run_tags (
    environment_id text NOT NULL,
    tag text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    CONSTRAINT run_tags_pkey PRIMARY KEY (environment_id, tag, created_at, run_id)
);

CREATE TABLE runs (
    id text NOT NULL,
    environment_id text NOT NULL,
    project_id text NOT NULL,
    task_identifier text NOT NULL,
    status text NOT NULL,
    queue_name text NOT NULL,
    concurrency_key text,
    payload text,
    payload_type text DEFAULT 'application/json'::text NOT NULL,
    output text,
    output_type text,
    error jsonb,
    idempotency_key text,
    idempotency_key_user text,
    idempotency_key_expires_at timestamp with time zone,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    metadata jsonb,
    max_attempts integer,
    max_duration_s integer,
    ttl text,
    expire_at timestamp with time zone,
    delay_until timestamp with time zone,
    available_at timestamp with time zone,
    attempt_number integer DEFAULT 0 NOT NULL,
    ledger_epoch integer DEFAULT 0 NOT NULL,
    claim_token text,
    worker_id text,
    worker_version text,
    parent_run_id text,
    root_run_id text,
    depth integer DEFAULT 0 NOT NULL,
    trigger_function text DEFAULT 'trigger'::text NOT NULL,
    batch_id text,
    batch_index integer,
    schedule_id text,
    is_test boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    expired_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    resume_due_at timestamp with time zone,
    one_time_use_token text,
    awaited boolean DEFAULT false NOT NULL,
    offered_at timestamp with time zone,
    traceparent text,
    wait_traceparent text,
    ledger_version integer DEFAULT 0 NOT NULL,
    suspended_worker_id text,
    list_status text GENERATED ALWAYS AS (
CASE
    WHEN (status = ANY (ARRAY['COMPLETED'::text, 'CANCELED'::text, 'FAILED'::text, 'CRASHED'::text, 'SYSTEM_FAILURE'::text, 'EXPIRED'::text, 'TIMED_OUT'::text])) THEN status
    ELSE 'LIVE'::text
END) STORED NOT NULL,
    offered_start boolean DEFAULT false NOT NULL,
    claim_from_runs boolean DEFAULT true NOT NULL,
    idempotency_key_scope text,
    change_xid xid8 DEFAULT pg_current_xact_id(),
    metadata_ops_epoch integer,
    metadata_ops integer,
    debounce_key text,
    realtime_streams text[],
    rate_limit_key text,
    rate_delayed_at timestamp with time zone,
    concurrency_limits text[],
    gates jsonb,
    offer_at_commit boolean DEFAULT false NOT NULL,
    rate_limit integer,
    rate_period_ms integer,
    CONSTRAINT runs_idempotency_key_scope_check CHECK ((idempotency_key_scope = ANY (ARRAY['run'::text, 'attempt'::text, 'global'::text]))),
    CONSTRAINT runs_pkey PRIMARY KEY (id),
    CONSTRAINT runs_rate_limit_check CHECK ((((rate_limit IS NULL) = (rate_period_ms IS NULL)) AND ((rate_limit IS NULL) OR ((rate_limit > 0) AND (rate_period_ms > 0))))) NOT VALID,
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['PENDING_VERSION'::text, 'QUEUED'::text, 'DEQUEUED'::text, 'EXECUTING'::text, 'WAITING'::text, 'COMPLETED'::text, 'CANCELED'::text, 'FAILED'::text, 'CRASHED'::text, 'SYSTEM_FAILURE'::text, 'DELAYED'::text, 'EXPIRED'::text, 'TIMED_OUT'::text])))
) WITH (fillfactor=50);
CREATE INDEX runs_batch ON public.runs USING btree (batch_id, batch_index) WHERE (batch_id IS NOT NULL);
CREATE INDEX runs_delayed ON public.runs USING btree (delay_until) WHERE (delay_until IS NOT NULL);
CREATE INDEX runs_expiring ON public.runs USING btree (expire_at) WHERE (expire_at IS NOT NULL);
CREATE INDEX runs_gated_executing ON public.runs USING btree (environment_id) WHERE ((status = 'EXECUTING'::text) AND (gates IS NOT NULL));
CREATE INDEX runs_gated_live ON public.runs USING btree (environment_id, queue_name) WHERE ((gates IS NOT NULL) AND (list_status = 'LIVE'::text));
CREATE UNIQUE INDEX runs_idempotency ON public.runs USING btree (environment_id, task_identifier, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX runs_lease ON public.runs USING btree (lease_expires_at) WHERE (lease_expires_at IS NOT NULL);
CREATE INDEX runs_limited_executing ON public.runs USING btree (environment_id, queue_name, concurrency_key) WHERE ((status = 'EXECUTING'::text) AND (NOT claim_from_runs));
CREATE INDEX runs_limited_live ON public.runs USING btree (environment_id, queue_name) WHERE ((NOT claim_from_runs) AND (list_status = 'LIVE'::text));
CREATE INDEX runs_limited_ready ON public.runs USING btree (environment_id, queue_name, created_at, id) WHERE ((NOT claim_from_runs) AND (((status = 'QUEUED'::text) AND (available_at IS NULL)) OR ((status = 'WAITING'::text) AND (resume_due_at IS NOT NULL))));
CREATE INDEX runs_limited_ready_keyed ON public.runs USING btree (environment_id, queue_name) WHERE ((NOT claim_from_runs) AND (concurrency_key <> ''::text) AND (((status = 'QUEUED'::text) AND (available_at IS NULL)) OR ((status = 'WAITING'::text) AND (resume_due_at IS NOT NULL))));
CREATE INDEX runs_list ON public.runs USING btree (environment_id, created_at DESC, id DESC);
CREATE INDEX runs_named_executing ON public.runs USING btree (environment_id) WHERE ((status = 'EXECUTING'::text) AND (concurrency_limits IS NOT NULL));
CREATE INDEX runs_named_live ON public.runs USING btree (environment_id, queue_name) WHERE ((concurrency_limits IS NOT NULL) AND (list_status = 'LIVE'::text));
CREATE UNIQUE INDEX runs_one_time_use_token ON public.runs USING btree (one_time_use_token) WHERE (one_time_use_token IS NOT NULL);
CREATE INDEX runs_own_rate_live ON public.runs USING btree (environment_id, queue_name) WHERE ((rate_limit IS NOT NULL) AND (list_status = 'LIVE'::text));
CREATE INDEX runs_parent ON public.runs USING btree (parent_run_id) WHERE (parent_run_id IS NOT NULL);
CREATE UNIQUE INDEX runs_pending_debounce_key ON public.runs USING btree (environment_id, task_identifier, debounce_key) WHERE ((debounce_key IS NOT NULL) AND (status = 'DELAYED'::text));
CREATE INDEX runs_queue_list ON public.runs USING btree (environment_id, queue_name, created_at DESC, id DESC) WHERE (queue_name <> ('task/'::text || task_identifier));
CREATE INDEX runs_queued ON public.runs USING btree (environment_id, created_at, id, task_identifier) WHERE ((status = 'QUEUED'::text) AND (available_at IS NULL) AND claim_from_runs);
CREATE INDEX runs_resumable ON public.runs USING btree (environment_id, resume_due_at, id, task_identifier) WHERE ((status = 'WAITING'::text) AND (resume_due_at IS NOT NULL) AND claim_from_runs);
CREATE INDEX runs_retrying ON public.runs USING btree (available_at) WHERE (available_at IS NOT NULL);
CREATE INDEX runs_schedule ON public.runs USING btree (schedule_id, created_at DESC, id DESC) WHERE (schedule_id IS NOT NULL);
CREATE INDEX runs_status_list ON public.runs USING btree (environment_id, list_status, created_at DESC, id DESC) WHERE (list_status <> 'COMPLETED'::text);
CREATE INDEX runs_stored_payload ON public.runs USING btree (environment_id, md5(payload)) WHERE (payload_type = 'application/store'::text);
CREATE INDEX runs_tags ON public.runs USING gin (tags) WHERE (tags <> '{}'::text[]);
CREATE INDEX runs_task_list ON public.runs USING btree (environment_id, task_identifier, created_at DESC, id DESC);
CREATE INDEX runs_test_list ON public.runs USING btree (environment_id, created_at DESC, id DESC) WHERE is_test;
CREATE TRIGGER runs_changed BEFORE UPDATE OF status, metadata, tags, error, started_at, finished_at, delay_until, expired_at, ttl, idempotency_key, idempotency_key_user, is_test, output, output_type, realtime_streams ON public.runs FOR EACH ROW WHEN ((((((((((((((((old.status IS DISTINCT FROM new.status) OR (old.metadata IS DISTINCT FROM new.metadata)) OR (old.tags IS DISTINCT FROM new.tags)) OR (old.error IS DISTINCT FROM new.error)) OR (old.started_at IS DISTINCT FROM new.started_at)) OR (old.finished_at IS DISTINCT FROM new.finished_at)) OR (old.delay_until IS DISTINCT FROM new.delay_until)) OR (old.expired_at IS DISTINCT FROM new.expired_at)) OR (old.ttl IS DISTINCT FROM new.ttl)) OR (old.idempotency_key IS DISTINCT FROM new.idempotency_key)) OR (old.idempotency_key_user IS DISTINCT FROM new.idempotency_key_user)) OR (old.is_test IS DISTINCT FROM new.is_test)) OR (old.output_type IS DISTINCT FROM new.output_type)) OR (old.output IS DISTINCT FROM new.output)) OR (old.realtime_streams IS DISTINCT FROM new.realtime_streams))) EXECUTE FUNCTION svc_run_changed();
CREATE TRIGGER runs_inserted AFTER INSERT ON public.runs REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION svc_runs_inserted();
CREATE CONSTRAINT TRIGGER runs_offer_at_commit AFTER INSERT ON public.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (new.offer_at_commit) EXECUTE FUNCTION svc_offer_at_commit();

CREATE TABLE schedule_ticks (
    schedule_id text NOT NULL,
    tick_at timestamp with time zone NOT NULL,
    run_id text,
    fired_at timestamp with time zone NOT NULL,
    CONSTRAINT schedule_ticks_pkey PRIMARY KEY (schedule_id, tick_at),
    CONSTRAINT schedule_ticks_schedule_id_fkey FOREIGN KEY (schedule_id) REFERENCES schedules(id) ON DELETE CASCADE
);

CREATE TABLE schedules (
    id text NOT NULL,
    environment_id text NOT NULL,
    type text NOT NULL,
    task_identifier text NOT NULL,
    cron text NOT NULL,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    deduplication_key text,
    external_id text,
    active boolean DEFAULT true NOT NULL,
    next_run_at timestamp with time zone NOT NULL,
    last_tick_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_check CHECK (((type = 'IMPERATIVE'::text) OR (deduplication_key IS NULL))),
    CONSTRAINT schedules_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT schedules_pkey PRIMARY KEY (id),
    CONSTRAINT schedules_type_check CHECK ((type = ANY (ARRAY['IMPERATIVE'::text, 'DECLARATIVE'::text])))
);
CREATE UNIQUE INDEX schedules_declarative ON public.schedules USING btree (environment_id, task_identifier) WHERE (type = 'DECLARATIVE'::text);
CREATE UNIQUE INDEX schedules_deduplication ON public.schedules USING btree (environment_id, deduplication_key) WHERE (deduplication_key IS NOT NULL);
CREATE INDEX schedules_due ON public.schedules USING btree (next_run_at) WHERE active;
CREATE INDEX schedules_list ON public.schedules USING btree (environment_id, created_at DESC, id DESC);

CREATE TABLE secret_keys (
    id bigint DEFAULT nextval('secret_keys_id_seq'::regclass) NOT NULL,
    environment_id text NOT NULL,
    key_hash text NOT NULL,
    key_encrypted text NOT NULL,
    key_preview text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    CONSTRAINT secret_keys_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT secret_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT secret_keys_pkey PRIMARY KEY (id)
);
CREATE INDEX secret_keys_environment ON public.secret_keys USING btree (environment_id);
CREATE TRIGGER secret_keys_changed AFTER DELETE OR UPDATE OR TRUNCATE ON public.secret_keys FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_credentials_changed();

CREATE TABLE session_records (
    session_id text NOT NULL,
    io text NOT NULL,
    seq bigint NOT NULL,
    part_id text NOT NULL,
    data text,
    headers jsonb,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT session_records_io_check CHECK ((io = ANY (ARRAY['in'::text, 'out'::text]))),
    CONSTRAINT session_records_pkey PRIMARY KEY (session_id, io, seq),
    CONSTRAINT session_records_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX session_records_part ON public.session_records USING btree (session_id, io, part_id);

CREATE TABLE session_runs (
    session_id text NOT NULL,
    run_id text NOT NULL,
    reason text NOT NULL,
    start_after bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT session_runs_pkey PRIMARY KEY (session_id, run_id),
    CONSTRAINT session_runs_reason_check CHECK ((reason = ANY (ARRAY['create'::text, 'append'::text, 'continue'::text]))),
    CONSTRAINT session_runs_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE
);
CREATE INDEX session_runs_list ON public.session_runs USING btree (session_id, created_at DESC, run_id DESC);
CREATE INDEX session_runs_run ON public.session_runs USING btree (run_id);

CREATE TABLE session_waits (
    waitpoint_id text NOT NULL,
    session_id text NOT NULL,
    io text NOT NULL,
    after_seq bigint NOT NULL,
    out_appended integer,
    CONSTRAINT session_waits_io_check CHECK ((io = ANY (ARRAY['in'::text, 'out'::text]))),
    CONSTRAINT session_waits_pkey PRIMARY KEY (waitpoint_id),
    CONSTRAINT session_waits_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE,
    CONSTRAINT session_waits_waitpoint_id_fkey FOREIGN KEY (waitpoint_id) REFERENCES waitpoints(id) ON DELETE CASCADE
);
CREATE INDEX session_waits_channel ON public.session_waits USING btree (session_id, io, after_seq);

CREATE TABLE sessions (
    id text NOT NULL,
    environment_id text NOT NULL,
    external_id text,
    type text NOT NULL,
    task_identifier text NOT NULL,
    trigger_config jsonb NOT NULL,
    current_run_id text,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    metadata jsonb,
    closed_at timestamp with time zone,
    closed_reason text,
    expires_at timestamp with time zone,
    in_seq bigint DEFAULT 0 NOT NULL,
    out_seq bigint DEFAULT 0 NOT NULL,
    in_delivered bigint DEFAULT 0 NOT NULL,
    out_trimmed_below bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT sessions_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT sessions_pkey PRIMARY KEY (id)
) WITH (fillfactor=80);
CREATE UNIQUE INDEX sessions_external_id ON public.sessions USING btree (environment_id, external_id) WHERE (external_id IS NOT NULL);
CREATE INDEX sessions_list ON public.sessions USING btree (environment_id, created_at DESC, id DESC);
CREATE INDEX sessions_tags ON public.sessions USING gin (tags);

CREATE TABLE svc_functions (
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT svc_functions_pkey PRIMARY KEY (name)
);

CREATE TABLE svc_migrations (
    id integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    checksum text,
    CONSTRAINT svc_migrations_pkey PRIMARY KEY (id)
);

CREATE TABLE users (
    id text NOT NULL,
    email text NOT NULL,
    name text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT users_email_key UNIQUE (email),
    CONSTRAINT users_pkey PRIMARY KEY (id)
);

CREATE TABLE waitpoints (
    id text NOT NULL,
    environment_id text NOT NULL,
    type text NOT NULL,
    status text NOT NULL,
    idempotency_key text,
    idempotency_key_user_provided boolean DEFAULT false NOT NULL,
    idempotency_key_expires_at timestamp with time zone,
    inactive_idempotency_key text,
    timeout_at timestamp with time zone,
    completed_at timestamp with time zone,
    output text,
    output_type text,
    output_is_error boolean DEFAULT false NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    completed_by_run_id text,
    completed_by_batch_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT waitpoints_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT waitpoints_pkey PRIMARY KEY (id),
    CONSTRAINT waitpoints_status_check CHECK ((status = ANY (ARRAY['WAITING'::text, 'COMPLETED'::text, 'TIMED_OUT'::text]))),
    CONSTRAINT waitpoints_type_check CHECK ((type = ANY (ARRAY['MANUAL'::text, 'DATETIME'::text, 'RUN'::text, 'BATCH'::text, 'SESSION'::text])))
);
CREATE INDEX waitpoints_batch ON public.waitpoints USING btree (completed_by_batch_id) WHERE (completed_by_batch_id IS NOT NULL);
CREATE INDEX waitpoints_child_run ON public.waitpoints USING btree (completed_by_run_id) WHERE (completed_by_run_id IS NOT NULL);
CREATE INDEX waitpoints_completed ON public.waitpoints USING btree (environment_id, completed_at, id) WHERE (status <> 'WAITING'::text);
CREATE INDEX waitpoints_due ON public.waitpoints USING btree (timeout_at) WHERE ((status = 'WAITING'::text) AND (timeout_at IS NOT NULL));
CREATE UNIQUE INDEX waitpoints_idempotency ON public.waitpoints USING btree (environment_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX waitpoints_inactive_idempotency ON public.waitpoints USING btree (environment_id, inactive_idempotency_key) WHERE (inactive_idempotency_key IS NOT NULL);
CREATE INDEX waitpoints_list ON public.waitpoints USING btree (environment_id, created_at DESC, id DESC) WHERE (type = 'MANUAL'::text);
CREATE INDEX waitpoints_list_status ON public.waitpoints USING btree (environment_id, status, created_at, id) WHERE ((type = 'MANUAL'::text) AND (status <> 'COMPLETED'::text));
CREATE INDEX waitpoints_tags ON public.waitpoints USING gin (tags) WHERE (tags <> '{}'::text[]);

CREATE TABLE wal_flush_marks (
    slot integer NOT NULL,
    flushes bigint DEFAULT 1 NOT NULL,
    CONSTRAINT wal_flush_marks_pkey PRIMARY KEY (slot)
);

CREATE TABLE worker_tasks (
    environment_id text NOT NULL,
    task_identifier text NOT NULL,
    queue_name text NOT NULL,
    concurrency_limit integer,
    retry jsonb,
    max_duration_s integer,
    kind text DEFAULT 'STANDARD'::text NOT NULL,
    worker_version text NOT NULL,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    rate_limit integer,
    rate_period_ms integer,
    concurrency_limits text[],
    concurrency_declared jsonb,
    CONSTRAINT worker_tasks_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT worker_tasks_pkey PRIMARY KEY (environment_id, task_identifier),
    CONSTRAINT worker_tasks_rate_limit_check CHECK ((((rate_limit IS NULL) = (rate_period_ms IS NULL)) AND ((rate_limit IS NULL) OR ((rate_limit > 0) AND (rate_period_ms > 0)))))
);
CREATE INDEX worker_tasks_limited_queues ON public.worker_tasks USING btree (environment_id, queue_name) WHERE ((concurrency_limit IS NOT NULL) OR (rate_limit IS NOT NULL));
CREATE TRIGGER worker_tasks_enter_version AFTER INSERT OR UPDATE OF worker_version ON public.worker_tasks FOR EACH ROW EXECUTE FUNCTION svc_enter_worker_version();
CREATE TRIGGER worker_tasks_side_inserted AFTER INSERT OR DELETE ON public.worker_tasks FOR EACH ROW EXECUTE FUNCTION svc_queue_side_changed();
CREATE TRIGGER worker_tasks_side_updated AFTER UPDATE OF queue_name, concurrency_limit, rate_limit ON public.worker_tasks FOR EACH ROW WHEN (((old.queue_name IS DISTINCT FROM new.queue_name) OR (old.concurrency_limit IS DISTINCT FROM new.concurrency_limit) OR (old.rate_limit IS DISTINCT FROM new.rate_limit))) EXECUTE FUNCTION svc_queue_side_changed();

CREATE TABLE worker_versions (
    environment_id text NOT NULL,
    version text NOT NULL,
    seen_until timestamp with time zone NOT NULL,
    CONSTRAINT worker_versions_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT worker_versions_pkey PRIMARY KEY (environment_id, version)
);

CREATE TABLE workers (
    id text NOT NULL,
    environment_id text NOT NULL,
    tasks text[] NOT NULL,
    version text NOT NULL,
    listener_lock bigint NOT NULL,
    alive_until timestamp with time zone NOT NULL,
    slots integer,
    slots_in_use integer DEFAULT 0 NOT NULL,
    started_at timestamp with time zone,
    heartbeat_at timestamp with time zone,
    full_since timestamp with time zone,
    queues text[],
    lease_ms integer,
    CONSTRAINT workers_environment_id_fkey FOREIGN KEY (environment_id) REFERENCES environments(id) ON DELETE CASCADE,
    CONSTRAINT workers_pkey PRIMARY KEY (id)
);
CREATE INDEX workers_environment ON public.workers USING btree (environment_id);

CREATE SEQUENCE personal_access_tokens_id_seq AS bigint START 1 INCREMENT 1 OWNED BY personal_access_tokens.id;

CREATE SEQUENCE secret_keys_id_seq AS bigint START 1 INCREMENT 1 OWNED BY secret_keys.id;

CREATE OR REPLACE FUNCTION public.svc_append_run_stream_records(p_environment_id text, p_run_id text, p_io text, p_key text, p_now timestamp with time zone, p_records jsonb, p_writer jsonb, p_context jsonb)
 RETURNS TABLE(result jsonb, offered_runs runs[], offered_ledgers json[])
 LANGUAGE plpgsql
AS $function$
DECLARE
  run_status text;
  st run_streams;
  stored jsonb;
  fresh_count int;
  first_seq bigint;
  first_data text;
  record_output text;
  waiting record;
  stream_id text := p_run_id || '/' || p_key;
  sent int;
  was_changed boolean;
  run_offers runs[];
  ledger_offers json[];
  all_runs runs[] := '{}';
  all_ledgers json[] := '{}';
BEGIN
  IF p_writer IS NOT NULL THEN
    -- The lock the realtime_streams update below takes, taken now: two appends of one run (two
    -- streams piped at once) never both hold a weaker one and wait to strengthen it.
    SELECT r.status INTO run_status FROM runs r
      WHERE r.id = p_run_id AND r.environment_id = p_environment_id AND r.claim_token = p_writer->>'claimToken' AND r.status = 'EXECUTING' FOR NO KEY UPDATE;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'fenced'), NULL::runs[], NULL::json[]; RETURN; END IF;
  ELSE
    SELECT r.status INTO run_status FROM runs r WHERE r.id = p_run_id AND r.environment_id = p_environment_id;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'not_found'), NULL::runs[], NULL::json[]; RETURN; END IF;
  END IF;

  SELECT * INTO st FROM run_streams WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    IF (SELECT count(*) FROM run_streams WHERE run_id = p_run_id AND io = p_io) >= (p_context->>'maxStreams')::int THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'too_many_streams'), NULL::runs[], NULL::json[]; RETURN;
    END IF;
    -- The run's row before the stream's (a new stream holds no lock yet), the order a run's own
    -- wait on an input stream takes them in (its claim, then the stream): no deadlock between them.
    IF p_io = 'out' THEN
      UPDATE runs SET realtime_streams = array_append(coalesce(realtime_streams, '{}'), p_key)
       WHERE id = p_run_id AND NOT (coalesce(realtime_streams, '{}') @> ARRAY[p_key]);
    END IF;
    INSERT INTO run_streams (environment_id, run_id, io, stream_key, created_at)
    VALUES (p_environment_id, p_run_id, p_io, p_key, p_now) ON CONFLICT DO NOTHING;
    SELECT * INTO st FROM run_streams WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key FOR UPDATE;
  END IF;

  WITH k AS MATERIALIZED (
    SELECT x->>'partId' AS part_id,
           (SELECT r.seq FROM run_stream_records r WHERE r.run_id = p_run_id AND r.io = p_io AND r.stream_key = p_key AND r.part_id = x->>'partId') AS seq
    FROM jsonb_array_elements(p_records) x)
  SELECT coalesce(jsonb_object_agg(k.part_id, k.seq) FILTER (WHERE k.seq IS NOT NULL), '{}') INTO stored FROM k;

  SELECT count(*) INTO fresh_count FROM jsonb_array_elements(p_records) x WHERE NOT stored ? (x->>'partId');
  first_seq := st.last_seq + 1;
  IF fresh_count > 0 THEN
    IF p_io = 'in' AND run_status = ANY (ARRAY(SELECT jsonb_array_elements_text(p_context->'finalStatuses'))) THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'finished'), NULL::runs[], NULL::json[]; RETURN;
    END IF;
    IF st.last_seq + fresh_count > (p_context->>'maxChunks')::bigint THEN
      RETURN QUERY SELECT jsonb_build_object('error', 'full'), NULL::runs[], NULL::json[]; RETURN;
    END IF;

    WITH fresh AS (
      SELECT x, first_seq + row_number() OVER (ORDER BY ord) - 1 AS seq
      FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
      WHERE NOT stored ? (x->>'partId')),
    inserted AS (
      INSERT INTO run_stream_records (environment_id, run_id, io, stream_key, seq, part_id, data, created_at)
      SELECT p_environment_id, p_run_id, p_io, p_key, fresh.seq, fresh.x->>'partId', fresh.x->>'data', p_now
      FROM fresh
      RETURNING seq, part_id, data),
    announced AS (
      -- The SSE record (see streamRecordJson), inside the notice when the notice stays under 8000 bytes.
      SELECT i.seq, json_build_object(
          'seq_num', i.seq,
          'timestamp', floor(extract(epoch FROM p_now) * 1000)::bigint,
          'headers', '[]'::json,
          'body', '{"data":' || i.data || ',"id":' || to_json(i.part_id)::text || '}')::text AS record
      FROM inserted i),
    notices AS (
      SELECT pg_notify(p_context->>'recordChannel',
        CASE WHEN octet_length(n.head || ',"r":' || n.record || '}') <= 7900 THEN n.head || ',"r":' || n.record || '}' ELSE n.head || '}' END)
      FROM (
        SELECT a.record, '{"e":' || to_json(p_environment_id)::text || ',"k":' || to_json(stream_id)::text || ',"s":' || to_json(stream_id)::text
                 || ',"io":"' || p_io || '","seq":' || a.seq AS head
        FROM announced a ORDER BY a.seq) n)
    SELECT count(*) INTO sent FROM notices;

    UPDATE run_streams SET last_seq = last_seq + fresh_count WHERE run_id = p_run_id AND io = p_io AND stream_key = p_key;

    IF p_io = 'in' THEN
      PERFORM pg_notify(p_context->>'inChannel', stream_id || ' ' || (first_seq + fresh_count - 1));
      SELECT t.x->>'data' INTO first_data
        FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
        WHERE NOT stored ? (t.x->>'partId') ORDER BY t.ord LIMIT 1;
      record_output := '{"seq":' || first_seq || ',"data":' || first_data || '}';
      -- The waits this chunk ends leave run_input_waits; one that already timed out is just
      -- removed (svc_complete_waitpoint changes nothing).
      FOR waiting IN
        DELETE FROM run_input_waits w WHERE w.run_id = p_run_id AND w.stream_key = p_key AND w.after_seq < first_seq
        RETURNING w.waitpoint_id
      LOOP
        SELECT c.changed, c.offered_runs, c.offered_ledgers INTO was_changed, run_offers, ledger_offers FROM svc_complete_waitpoint(
          waiting.waitpoint_id, 'COMPLETED', p_now, record_output,
          'application/json', false, p_environment_id, 'MANUAL',
          jsonb_build_object('ok', true, 'outputType', 'application/json', 'output', record_output),
          p_context->>'resumeChannel', p_context->>'readyChannel', p_context->'offers') c;
        IF run_offers IS NOT NULL THEN
          all_runs := all_runs || run_offers;
          all_ledgers := all_ledgers || ledger_offers;
        END IF;
      END LOOP;
    END IF;
  END IF;

  RETURN QUERY SELECT jsonb_build_object(
    'seqs', (SELECT jsonb_agg(CASE WHEN n.duplicate THEN (stored->>n.part_id)::bigint ELSE first_seq + n.fresh_before END ORDER BY n.ord) FROM (
               SELECT t.ord, t.x->>'partId' AS part_id, stored ? (t.x->>'partId') AS duplicate,
                      coalesce(count(*) FILTER (WHERE NOT stored ? (t.x->>'partId')) OVER (ORDER BY t.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS fresh_before
               FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)) n),
    'duplicates', (SELECT jsonb_agg(stored ? (t.x->>'partId') ORDER BY t.ord) FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord))),
    all_runs, all_ledgers;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_append_session_records(p_environment_id text, p_ref text, p_io text, p_now timestamp with time zone, p_records jsonb, p_writer jsonb, p_context jsonb)
 RETURNS TABLE(result jsonb, offered_runs runs[], offered_ledgers json[])
 LANGUAGE plpgsql
AS $function$
DECLARE
  s sessions;
  stored jsonb;
  fresh_count int;
  first_seq bigint;
  first_record record;
  record_output text;
  waiting record;
  delivered int := 0;
  needs_run boolean := false;
  stream_key text;
  sent int;
  was_changed boolean;
  run_offers runs[];
  ledger_offers json[];
  all_runs runs[] := '{}';
  all_ledgers json[] := '{}';
BEGIN
  IF p_writer IS NOT NULL THEN
    PERFORM 1 FROM runs WHERE id = p_writer->>'runId' AND claim_token = p_writer->>'claimToken' AND status = 'EXECUTING' FOR UPDATE;
    IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'fenced'), NULL::runs[], NULL::json[]; RETURN; END IF;
  END IF;
  IF starts_with(p_ref, 'session_') THEN
    SELECT * INTO s FROM sessions WHERE id = p_ref AND environment_id = p_environment_id FOR UPDATE;
  ELSE
    SELECT * INTO s FROM sessions WHERE environment_id = p_environment_id AND external_id = p_ref FOR UPDATE;
  END IF;
  IF NOT FOUND THEN RETURN QUERY SELECT jsonb_build_object('error', 'not_found'), NULL::runs[], NULL::json[]; RETURN; END IF;

  -- One index lookup per record, a subquery the planner cannot turn into a join: `IN (SELECT …)`
  -- (or a join) was planned as a scan of every record of the channel, a cost that grew with the
  -- conversation.
  WITH k AS MATERIALIZED (
    SELECT x->>'partId' AS part_id,
           (SELECT r.seq FROM session_records r WHERE r.session_id = s.id AND r.io = p_io AND r.part_id = x->>'partId') AS seq
    FROM jsonb_array_elements(p_records) x)
  SELECT coalesce(jsonb_object_agg(k.part_id, k.seq) FILTER (WHERE k.seq IS NOT NULL), '{}') INTO stored FROM k;

  SELECT count(*) INTO fresh_count FROM jsonb_array_elements(p_records) x WHERE NOT stored ? (x->>'partId');
  IF fresh_count > 0 THEN
    -- A part already stored is acknowledged whatever became of the session since; new ones are not.
    IF s.closed_at IS NOT NULL THEN RETURN QUERY SELECT jsonb_build_object('error', 'closed'), NULL::runs[], NULL::json[]; RETURN; END IF;
    IF s.expires_at IS NOT NULL AND s.expires_at <= p_now THEN RETURN QUERY SELECT jsonb_build_object('error', 'expired'), NULL::runs[], NULL::json[]; RETURN; END IF;
    -- The row is locked: its counters are the latest (the session's row is written once, below).
    first_seq := CASE WHEN p_io = 'in' THEN s.in_seq ELSE s.out_seq END + 1;
    stream_key := coalesce(s.external_id, s.id);

    WITH fresh AS (
      SELECT x, first_seq + row_number() OVER (ORDER BY ord) - 1 AS seq
      FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
      WHERE NOT stored ? (x->>'partId')),
    inserted AS (
      INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at)
      SELECT s.id, p_io, fresh.seq, fresh.x->>'partId', fresh.x->>'data',
             CASE WHEN jsonb_typeof(fresh.x->'headers') = 'array' AND jsonb_array_length(fresh.x->'headers') > 0 THEN fresh.x->'headers' END, p_now
      FROM fresh
      RETURNING seq, part_id, data, headers),
    announced AS (
      -- The SSE record (see sseRecordJson), inside the notice when the notice stays under 8000 bytes.
      SELECT i.seq, json_build_object(
          'seq_num', i.seq,
          'timestamp', floor(extract(epoch FROM p_now) * 1000)::bigint,
          'headers', coalesce(i.headers, '[]'::jsonb),
          'body', CASE WHEN i.data IS NULL THEN '' ELSE '{"data":' || i.data || ',"id":' || to_json(i.part_id)::text || '}' END)::text AS record
      FROM inserted i),
    notices AS (
      -- In sequence order: the ordered subquery is read in order, and each row notified as it is read.
      SELECT pg_notify(p_context->>'recordChannel',
        CASE WHEN octet_length(n.head || ',"r":' || n.record || '}') <= 7900 THEN n.head || ',"r":' || n.record || '}' ELSE n.head || '}' END)
      FROM (
        SELECT a.record, '{"e":' || to_json(s.environment_id)::text || ',"k":' || to_json(stream_key)::text || ',"s":' || to_json(s.id)::text
                 || ',"io":"' || p_io || '","seq":' || a.seq AS head
        FROM announced a ORDER BY a.seq) n)
    SELECT count(*) INTO sent FROM notices;

    IF p_io = 'in' THEN
      -- For runs waiting in session.in.once (a wait that keeps its worker slot).
      PERFORM pg_notify(p_context->>'inChannel', s.id || ' ' || (first_seq + fresh_count - 1));
      -- The first new record, as stored just above (not read back): what the waits it ends get
      -- (the JSON waitOutputJson makes of a stored record).
      SELECT t.x->>'partId' AS part_id, t.x->>'data' AS data,
             CASE WHEN jsonb_typeof(t.x->'headers') = 'array' AND jsonb_array_length(t.x->'headers') > 0 THEN t.x->'headers' END AS headers
        INTO first_record
        FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)
        WHERE NOT stored ? (t.x->>'partId') ORDER BY t.ord LIMIT 1;
      record_output := svc_channel_wait_output(first_seq, first_record.part_id, first_record.data, first_record.headers);
      -- The waits this record ends leave session_waits (so the next append does not read them
      -- again); one that already timed out is just removed (svc_complete_waitpoint changes nothing).
      FOR waiting IN
        DELETE FROM session_waits sw WHERE sw.session_id = s.id AND sw.io = 'in' AND sw.after_seq < first_seq
        RETURNING sw.waitpoint_id, sw.out_appended
      LOOP
        SELECT c.changed, c.offered_runs, c.offered_ledgers INTO was_changed, run_offers, ledger_offers FROM svc_complete_waitpoint(
          waiting.waitpoint_id, 'COMPLETED', p_now, record_output,
          'application/json', false, p_environment_id, 'SESSION',
          jsonb_strip_nulls(jsonb_build_object('ok', true, 'outputType', 'application/json', 'outAppended', waiting.out_appended, 'output', record_output)),
          p_context->>'resumeChannel', p_context->>'readyChannel', p_context->'offers') c;
        IF was_changed THEN delivered := delivered + 1; END IF;
        IF run_offers IS NOT NULL THEN
          all_runs := all_runs || run_offers;
          all_ledgers := all_ledgers || ledger_offers;
        END IF;
      END LOOP;
      UPDATE sessions SET in_seq = in_seq + fresh_count,
             in_delivered = CASE WHEN delivered > 0 THEN greatest(in_delivered, first_seq) ELSE in_delivered END
       WHERE id = s.id;
      needs_run := s.current_run_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM runs r WHERE r.id = s.current_run_id
          AND r.status <> ALL (ARRAY(SELECT jsonb_array_elements_text(p_context->'finalStatuses'))));
    ELSE
      UPDATE sessions SET out_seq = out_seq + fresh_count WHERE id = s.id;
    END IF;
  END IF;

  -- Each input's sequence number: a duplicate's as stored before, a new one's in input order
  -- from first_seq (as the INSERT above numbered them).
  RETURN QUERY SELECT jsonb_build_object(
    'sessionId', s.id,
    'needsRun', needs_run,
    'seqs', (SELECT jsonb_agg(CASE WHEN n.duplicate THEN (stored->>n.part_id)::bigint ELSE first_seq + n.fresh_before END ORDER BY n.ord) FROM (
               SELECT t.ord, t.x->>'partId' AS part_id, stored ? (t.x->>'partId') AS duplicate,
                      count(*) FILTER (WHERE NOT stored ? (t.x->>'partId')) OVER (ORDER BY t.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS fresh_before
               FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord)) n),
    'duplicates', (SELECT jsonb_agg(stored ? (t.x->>'partId') ORDER BY t.ord) FROM jsonb_array_elements(p_records) WITH ORDINALITY AS t(x, ord))),
    all_runs, all_ledgers;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_batch_trigger(p_environment text, p_items jsonb, p_options jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(batch_id text, run_ids text[], is_cached boolean)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.svc_channel_wait_output(p_seq bigint, p_part_id text, p_data text, p_headers jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  SELECT '{"seq":' || p_seq || ',"id":' || to_json(p_part_id)::text || ',"data":' || coalesce(p_data, 'null')
    || CASE WHEN p_headers IS NULL OR jsonb_typeof(p_headers) <> 'array' OR jsonb_array_length(p_headers) = 0 THEN '' ELSE ',"headers":' || p_headers::text END || '}'
$function$;

CREATE OR REPLACE FUNCTION public.svc_claimed_ledger(p_run_id text, p_epoch integer, p_keyed_epoch integer, p_load boolean, OUT ledger json, OUT ledger_version integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NOT p_load THEN
    ledger_version := 0;
    RETURN;
  END IF;
  SELECT (SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = p_run_id AND l.epoch IN (p_epoch, p_keyed_epoch)), r.ledger_version
    INTO ledger, ledger_version
    FROM runs r WHERE r.id = p_run_id;
END
$function$;

CREATE OR REPLACE FUNCTION public.svc_complete_waitpoint(p_id text, p_status text, p_now timestamp with time zone, p_output text, p_output_type text, p_output_is_error boolean, p_environment_id text, p_type text, p_outcome jsonb, p_resume_channel text, p_ready_channel text, p_offers jsonb)
 RETURNS TABLE(changed boolean, resumed_run_ids text[], waitpoint waitpoints, offered_runs runs[], offered_ledgers json[])
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.svc_enter_worker_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO worker_versions (environment_id, version, seen_until) VALUES (NEW.environment_id, NEW.worker_version, 'infinity')
  ON CONFLICT (environment_id, version) DO NOTHING;
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_input_rows(p_array json)
 RETURNS SETOF json
 LANGUAGE plpgsql
 STABLE ROWS 1
AS $function$
BEGIN
  RETURN QUERY SELECT json_array_elements(p_array);
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_make_channel_wait(p_waitpoint_id text, p_environment_id text, p_ref text, p_run_id text, p_io text, p_after_seq bigint, p_timeout_at timestamp with time zone, p_out_appended integer, p_now timestamp with time zone, p_closed_error text, p_output_type text, p_timers_channel text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
  s sessions;
  cursor_seq bigint;
  found_record record;
  wait_until timestamptz;
BEGIN
  IF starts_with(p_ref, 'session_') THEN
    SELECT * INTO s FROM sessions WHERE id = p_ref AND environment_id = p_environment_id FOR UPDATE;
  ELSE
    SELECT * INTO s FROM sessions WHERE environment_id = p_environment_id AND external_id = p_ref FOR UPDATE;
  END IF;
  IF NOT FOUND THEN RETURN 'not_found'; END IF;

  IF s.closed_at IS NOT NULL THEN
    INSERT INTO waitpoints (id, environment_id, type, status, completed_at, output, output_type, output_is_error, created_at)
    VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'COMPLETED', p_now, p_closed_error, p_output_type, true, p_now);
    RETURN 'closed';
  END IF;

  cursor_seq := coalesce(p_after_seq, (SELECT sr.start_after FROM session_runs sr WHERE sr.session_id = s.id AND sr.run_id = p_run_id), s.in_delivered);
  SELECT r.seq, r.part_id, r.data, r.headers INTO found_record
    FROM session_records r WHERE r.session_id = s.id AND r.io = p_io AND r.seq > cursor_seq ORDER BY r.seq LIMIT 1;
  IF FOUND THEN
    INSERT INTO waitpoints (id, environment_id, type, status, completed_at, output, output_type, output_is_error, created_at)
    VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'COMPLETED', p_now,
            svc_channel_wait_output(found_record.seq, found_record.part_id, found_record.data, found_record.headers), p_output_type, false, p_now);
    IF p_io = 'in' THEN
      UPDATE sessions SET in_delivered = greatest(in_delivered, found_record.seq) WHERE id = s.id;
    END IF;
    RETURN 'arrived';
  END IF;

  wait_until := CASE WHEN s.expires_at IS NOT NULL AND (p_timeout_at IS NULL OR s.expires_at < p_timeout_at) THEN s.expires_at ELSE p_timeout_at END;
  INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, created_at)
  VALUES (p_waitpoint_id, p_environment_id, 'SESSION', 'WAITING', wait_until, p_now);
  INSERT INTO session_waits (waitpoint_id, session_id, io, after_seq, out_appended)
  VALUES (p_waitpoint_id, s.id, p_io, cursor_seq, p_out_appended);
  IF wait_until IS NOT NULL THEN
    PERFORM pg_notify(p_timers_channel, '');
  END IF;
  RETURN 'waiting';
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_notify_credentials_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('svc_credentials', TG_TABLE_NAME);
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_offer_at_commit()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.svc_offer_worker(p_environment_id text, p_task text, p_now timestamp with time zone, p_prefer text, p_free_only boolean)
 RETURNS TABLE(id text, version text, lease_ms integer)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT wk.id, wk.version, coalesce(wk.lease_ms, 15000) FROM workers wk
  WHERE wk.environment_id = p_environment_id AND p_task = ANY (wk.tasks) AND wk.alive_until > p_now
    AND (NOT p_free_only OR wk.full_since IS NULL)
    AND NOT pg_try_advisory_xact_lock_shared(wk.listener_lock)
  ORDER BY wk.full_since IS NULL DESC, wk.id IS NOT DISTINCT FROM p_prefer DESC, random()
  LIMIT 1
$function$;

CREATE OR REPLACE FUNCTION public.svc_parse_duration(p_text text)
 RETURNS numeric
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
DECLARE
  v_text text := btrim(p_text, E' \t\n\r\f\v');
  v_total numeric := 0;
  v_part text[];
BEGIN
  IF v_text IS NULL OR v_text !~ '^([0-9]+(ms|s|m|hr|h|d|w))+$' THEN RETURN NULL; END IF;
  FOR v_part IN SELECT regexp_matches(v_text, '([0-9]+)(ms|s|m|hr|h|d|w)', 'g') LOOP
    v_total := v_total + v_part[1]::numeric * CASE v_part[2]
      WHEN 'ms' THEN 1 WHEN 's' THEN 1000 WHEN 'm' THEN 60000 WHEN 'h' THEN 3600000 WHEN 'hr' THEN 3600000
      WHEN 'd' THEN 86400000 ELSE 604800000 END;
  END LOOP;
  RETURN v_total;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_queue_is_limited(p_environment_id text, p_queue_name text)
 RETURNS TABLE(limited boolean)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT EXISTS (
    SELECT 1 FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name
      AND (wt.concurrency_limit IS NOT NULL OR wt.rate_limit IS NOT NULL))
  OR EXISTS (
    SELECT 1 FROM queues q
    WHERE q.environment_id = p_environment_id AND q.name = p_queue_name AND (q.paused OR q.concurrency_limit_override IS NOT NULL))
$function$;

CREATE OR REPLACE FUNCTION public.svc_queue_limit(p_environment_id text, p_queue_name text)
 RETURNS TABLE(n integer, paused boolean)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(
           (SELECT q.concurrency_limit_override FROM queues q WHERE q.environment_id = p_environment_id AND q.name = p_queue_name),
           (SELECT min(wt.concurrency_limit) FROM worker_tasks wt WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name),
           2147483647),
         coalesce((SELECT q.paused FROM queues q WHERE q.environment_id = p_environment_id AND q.name = p_queue_name), false)
$function$;

CREATE OR REPLACE FUNCTION public.svc_queue_side_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_TABLE_NAME = 'queues' THEN
    NEW.runs_limited := NULL;
    RETURN NEW;
  END IF;
  UPDATE queues q SET runs_limited = NULL
    WHERE q.runs_limited IS NOT NULL
      AND ((TG_OP <> 'DELETE' AND q.environment_id = NEW.environment_id AND q.name = NEW.queue_name)
        OR (TG_OP <> 'INSERT' AND q.environment_id = OLD.environment_id AND q.name = OLD.queue_name));
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_rate_wait(p_environment_id text, p_queue_name text, p_tasks text[], p_now timestamp with time zone, p_window integer)
 RETURNS TABLE(due_at timestamp with time zone, waiting integer)
 LANGUAGE sql
 STABLE
AS $function$
  WITH rate AS (
    SELECT wt.rate_limit AS n, wt.rate_period_ms AS ms FROM worker_tasks wt
    WHERE wt.environment_id = p_environment_id AND wt.queue_name = p_queue_name AND wt.rate_limit IS NOT NULL
    ORDER BY wt.rate_limit::float8 / wt.rate_period_ms, wt.rate_period_ms DESC LIMIT 1),
  ready AS (
    SELECT r.id, coalesce(r.rate_limit_key, '') AS rk, r.rate_limit AS rl, r.rate_period_ms AS rp, r.created_at FROM runs r
    WHERE r.environment_id = p_environment_id AND r.queue_name = p_queue_name AND NOT r.claim_from_runs
      AND r.status = 'QUEUED' AND r.available_at IS NULL AND (p_tasks IS NULL OR r.task_identifier = ANY (p_tasks))
    ORDER BY r.created_at, r.id LIMIT p_window),
  keys AS (SELECT x.rk, count(*) AS n FROM ready x GROUP BY x.rk),
  -- Runs with their own bound, ranked among their key's ready runs (only such keys are ranked).
  own AS (
    SELECT o.id, o.rk, o.rank, o.rl AS n, o.rp AS ms FROM (
      SELECT x.id, x.rk, x.rl, x.rp, row_number() OVER (PARTITION BY x.rk ORDER BY x.created_at, x.id) AS rank
      FROM ready x WHERE x.rk IN (SELECT y.rk FROM ready y WHERE y.rp IS NOT NULL)) o
    WHERE o.rp IS NOT NULL),
  log AS (
    SELECT p.rk, p.ms, e.at, sum(e.n) OVER (PARTITION BY p.rk, p.ms ORDER BY e.at DESC ROWS UNBOUNDED PRECEDING) AS newer
    FROM (SELECT k.rk, rate.ms FROM keys k CROSS JOIN rate UNION SELECT o.rk, o.ms FROM own o) p
    CROSS JOIN LATERAL (
      SELECT w.started_at, w.started_n FROM rate_limit_windows w
      WHERE w.environment_id = p_environment_id AND w.queue_name = p_queue_name AND w.rate_key = p.rk
      ORDER BY w.period_ms = p.ms DESC, w.period_ms DESC LIMIT 1) s
    CROSS JOIN LATERAL unnest(s.started_at, s.started_n) AS e(at, n)
    WHERE e.at > p_now - make_interval(secs => p.ms / 1000.0)),
  used AS (SELECT l.rk, l.ms, max(l.newer) AS used FROM log l GROUP BY l.rk, l.ms),
  -- The queue's bound, per key: its ready runs past its room (the limit less its starts in the
  -- period) wait.
  queue_held AS (
    SELECT k.rk, k.n AS ready, greatest(0, rate.n - coalesce(u.used, 0)) AS room, rate.n, rate.ms
    FROM keys k CROSS JOIN rate LEFT JOIN used u ON u.rk = k.rk AND u.ms = rate.ms),
  -- A run's own bound: it waits when its rank and its key's starts in its period pass it.
  own_held AS (
    SELECT o.id, o.rk, o.rank, o.n, o.ms FROM own o LEFT JOIN used u ON u.rk = o.rk AND u.ms = o.ms
    WHERE o.rank + coalesce(u.used, 0) > o.n),
  -- Per key and bound, the first run it holds that only time frees (not behind other held runs):
  -- it may start when the newest start that fills the bound for it leaves the period. A run held
  -- by two bounds waits for the later; the earlier still wakes the worker, whose claim then finds
  -- the later.
  first_held AS (
    SELECT q.rk, q.n, q.ms, q.room + 1 AS rank FROM queue_held q WHERE q.ready > q.room AND q.room < q.n
    UNION ALL
    SELECT h.rk, h.n, h.ms, min(h.rank) FROM own_held h WHERE h.rank <= h.n GROUP BY h.rk, h.n, h.ms),
  due AS (
    SELECT max(l.at) + make_interval(secs => f.ms / 1000.0) AS due_at
    FROM first_held f JOIN log l ON l.rk = f.rk AND l.ms = f.ms AND l.newer >= f.n - f.rank + 1
    GROUP BY f.rk, f.n, f.ms, f.rank)
  SELECT (SELECT min(d.due_at) FROM due d),
    ((SELECT coalesce(sum(q.ready - q.room), 0) FROM queue_held q WHERE q.ready > q.room)
     + (SELECT count(*) FROM own_held h WHERE NOT EXISTS (SELECT 1 FROM queue_held q WHERE q.rk = h.rk AND h.rank > q.room)))::int
$function$;

CREATE OR REPLACE FUNCTION public.svc_run_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  notice text;
BEGIN
  -- Taken first: a writer whose check below misses a watch registered at this moment has its
  -- transaction id below the horizon the registering process waits past (realtime watches).
  NEW.change_xid := pg_current_xact_id();
  IF EXISTS (SELECT 1 FROM realtime_watches w WHERE w.environment_id = NEW.environment_id) THEN
    notice := json_build_array(NEW.environment_id, NEW.id, NEW.batch_id, NEW.tags)::text;
    IF octet_length(notice) > 7900 THEN
      notice := json_build_array(NEW.environment_id, NEW.id, NEW.batch_id, NULL)::text;
    END IF;
    PERFORM pg_notify('svc_run_changes', notice);
  END IF;
  RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_runs_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('svc_run_changes',
    CASE WHEN octet_length(n.notice) > 7900 THEN json_build_array(i.environment_id, i.id, i.batch_id, NULL)::text ELSE n.notice END)
  FROM inserted i
  CROSS JOIN LATERAL (SELECT json_build_array(i.environment_id, i.id, i.batch_id, i.tags)::text AS notice) n
  WHERE i.environment_id IN (SELECT w.environment_id FROM realtime_watches w);
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_time_ordered_id(p_prefix text, p_now timestamp with time zone)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_alphabet constant text := '0123456789abcdefghijklmnopqrstuvwxyz';
  v_ms bigint := floor(extract(epoch FROM p_now) * 1000)::bigint;
  v_time text := '';
  v_random bytea := uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
  v_tail text := '';
  v_i int := 0;
BEGIN
  WHILE v_ms > 0 LOOP
    v_time := substr(v_alphabet, (v_ms % 36)::int + 1, 1) || v_time;
    v_ms := v_ms / 36;
  END LOOP;
  -- Bytes below 252 only (252 = 7 × 36): each then picks a character without bias.
  WHILE length(v_tail) < 12 LOOP
    IF v_i >= length(v_random) THEN
      v_random := uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
      v_i := 0;
    END IF;
    -- (Bytes 6 and 8 of a UUIDv4 hold its version and variant bits: skipped.)
    IF v_i % 16 NOT IN (6, 8) AND get_byte(v_random, v_i) < 252 THEN v_tail := v_tail || substr(v_alphabet, get_byte(v_random, v_i) % 36 + 1, 1); END IF;
    v_i := v_i + 1;
  END LOOP;
  RETURN p_prefix || lpad(v_time, 9, '0') || v_tail;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_trigger(p_environment text, p_task text, p_payload jsonb DEFAULT NULL::jsonb, p_options jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(run_id text, is_cached boolean)
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_env record;
  v_run record;
BEGIN
  SELECT * INTO v_env FROM svc_trigger_environment(p_environment);
  SELECT * INTO v_run FROM svc_trigger_run(v_env.environment_id, v_env.project_id, p_task, p_payload, p_options, NULL, NULL, clock_timestamp());
  IF NOT v_run.is_cached THEN
    IF v_run.run_status <> 'QUEUED' THEN PERFORM pg_notify('svc_timers', '');
    -- A run marked offer_at_commit is offered, or the workers woken, at COMMIT (svc_offer_at_commit).
    ELSIF NOT (SELECT r.offer_at_commit FROM runs r WHERE r.id = v_run.run_id) THEN PERFORM pg_notify('svc_runs_ready', v_env.environment_id);
    END IF;
  END IF;
  RETURN QUERY SELECT v_run.run_id, v_run.is_cached;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_trigger_environment(p_environment text)
 RETURNS TABLE(environment_id text, project_id text)
 LANGUAGE plpgsql
 STABLE
AS $function$
BEGIN
  IF p_environment LIKE 'env\_%' THEN
    RETURN QUERY SELECT e.id, e.project_id FROM environments e WHERE e.id = p_environment AND e.archived_at IS NULL;
  ELSIF p_environment LIKE '%/%' THEN
    RETURN QUERY SELECT e.id, e.project_id FROM environments e JOIN projects p ON p.id = e.project_id
      WHERE p.ref = split_part(p_environment, '/', 1) AND e.parent_environment_id IS NULL
        AND e.slug = CASE split_part(p_environment, '/', 2) WHEN 'stg' THEN 'staging' ELSE split_part(p_environment, '/', 2) END;
  END IF;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '22023',
      MESSAGE = format('environment: no environment %s (give its id, env_…, or <project ref>/<slug>, e.g. proj_abc/prod)', coalesce('"' || p_environment || '"', 'NULL'));
  END IF;
END;
$function$;

CREATE OR REPLACE FUNCTION public.svc_trigger_run(p_environment_id text, p_project_id text, p_task text, p_payload jsonb, p_options jsonb, p_batch_id text, p_batch_index integer, p_now timestamp with time zone)
 RETURNS TABLE(run_id text, run_status text, run_queue text, is_cached boolean)
 LANGUAGE plpgsql
 SET "TimeZone" TO 'UTC'
AS $function$
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
$function$;
