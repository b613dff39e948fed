import type { Queryable } from "../packages/runtime/src/db/queryable.ts";

/**
 * Fills `runs` for the run-list benchmark straight from SQL (INSERT … SELECT generate_series; the
 * API would take an hour for a million runs). Everything is a function of the row number `i`, so
 * two loads of the same size hold the same runs (ids, tasks, statuses, tags) at the same offsets
 * from `now`:
 *
 * - Rows come in blocks of 100; every sixth block (b % 6 = 5) belongs to the second environment,
 *   so `main` gets exactly `runs` rows and `other` a fifth as many, interleaved in time as two
 *   environments of one database would be. Rows are inserted in created_at order (the heap is in
 *   time order, as it is when runs arrive over time), evenly over `days` days up to `now`.
 * - Every tenth block is a batch (`batch_bench_<b>`, one task, created within 100 ms).
 * - Tasks: 20, skewed (the commonest ~22 % of runs, the rarest ~1.3 %); `legacy-import` has no
 *   run in the last 8 days. Three more tasks are scheduled: the first run of every day, hour and
 *   quarter hour becomes `nightly-report` / `sync-crm` / `poll-inbox` of schedule
 *   `sched_bench_<env>_daily|hourly|quarter`.
 * - Statuses: ~91 % COMPLETED, 5 % FAILED, 0.3 % CANCELED, 0.2 % CRASHED, 0.2 % TIMED_OUT, 1.5 %
 *   WAITING (each on a MANUAL waitpoint with its ledger row); QUEUED (1 %) and EXECUTING (0.8 %)
 *   only in the last day. No run is EXPIRED or DELAYED.
 * - 30 % carry 1–3 tags of `tag-00` … `tag-49` (skewed), 5 % are child runs, 5 % have an
 *   idempotency key, 10 % metadata. Payloads ~150 bytes, outputs ~60, errors ~450.
 * - `chat-agent` runs of the main environment are session runs: one session per 20 minutes
 *   (`session_bench_<n>`, in `sessions` and `session_runs`).
 * - `run_tags` holds each run's tags, as the trigger writes them.
 */
export interface RunListPreload {
  mainEnvironmentId: string;
  otherEnvironmentId: string;
  projectId: string;
  /** Runs of the main environment; a multiple of 100. */
  runs: number;
  days: number;
  now: Date;
}

export const TASKS = [
  "send-email", "process-order", "sync-inventory", "generate-thumbnail", "charge-card", "index-document", "send-webhook",
  "resize-video", "update-search", "chat-agent", "transcribe-audio", "score-lead", "export-csv", "import-contacts",
  "refresh-cache", "notify-slack", "compute-report", "archive-logs", "reconcile-ledger", "legacy-import",
] as const;

export async function preloadRuns(db: Queryable, p: RunListPreload): Promise<void> {
  if (p.runs % 100 !== 0) throw new Error("preloadRuns: runs must be a multiple of 100");
  const total = (p.runs / 100) * 6 / 5 * 100;
  if (!Number.isInteger(total)) throw new Error("preloadRuns: runs / 100 must be a multiple of 5");
  const fromMs = p.now.getTime() - p.days * 86_400_000;
  const stepMs = (p.days * 86_400_000) / total;
  // $1 main env, $2 other env, $3 project, $4 rows, $5 from (epoch ms), $6 step (ms), $7 now (epoch ms), $8 tasks
  await db.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, payload, output, output_type, error,
       idempotency_key, idempotency_key_user, tags, metadata, attempt_number, worker_version, parent_run_id, root_run_id, depth,
       trigger_function, batch_id, batch_index, schedule_id, created_at, updated_at, started_at, finished_at, traceparent, is_test)
     SELECT id, env, $3, task, status, 'task/' || task,
       '{"userId":"user_' || (h2 % 100000) || '","orderId":"ord_' || md5(id) || '","items":[' || (h2 % 7) || ',' || (h3 % 11) || '],"priority":"normal"}',
       CASE WHEN status = 'COMPLETED' THEN '{"ok":true,"count":' || (h2 % 1000) || ',"ref":"' || substr(md5(id || 'o'), 1, 20) || '"}' END,
       CASE WHEN status = 'COMPLETED' THEN 'application/json' END,
       CASE WHEN status IN ('FAILED', 'CRASHED', 'TIMED_OUT') THEN jsonb_build_object('type', 'user', 'name', 'Error',
         'message', 'upstream answered 502 for order ' || (h2 % 100000),
         'stack', replace('Error: upstream answered 502|    at callUpstream (src/trigger/' || task || '.ts:41:11)|    at async run (src/trigger/' || task
           || '.ts:17:5)|    at async executeTask (node_modules/@svc/runtime/dist/worker/execute.js:88:20)|    at async Worker.attempt (node_modules/@svc/runtime/dist/worker/attempt.js:131:7)', '|', chr(10))) END,
       CASE WHEN h4 % 20 = 0 THEN md5(id || 'k') || md5(id || 'l') END,
       CASE WHEN h4 % 20 = 0 THEN 'order-' || (h2 % 100000) END,
       CASE WHEN h3 % 100 >= 30 THEN '{}'::text[]
            WHEN h3 % 3 = 0 THEN ARRAY[tag1]
            WHEN h3 % 3 = 1 THEN ARRAY[tag1, 'tag-' || lpad(((tagn + 7) % 50)::text, 2, '0')]
            ELSE ARRAY[tag1, 'tag-' || lpad(((tagn + 7) % 50)::text, 2, '0'), 'tag-' || lpad(((tagn + 19) % 50)::text, 2, '0')] END,
       CASE WHEN h4 % 10 = 1 THEN '{"progress":1,"stage":"done"}'::jsonb END,
       CASE WHEN status = 'FAILED' THEN 3 WHEN status IN ('QUEUED') THEN 0 ELSE 1 END,
       '20261101.' || (1 + (i * 40 / $4::bigint)),
       parent, parent, CASE WHEN parent IS NULL THEN 0 ELSE 1 END,
       CASE WHEN batch IS NOT NULL THEN 'batchTrigger' WHEN parent IS NOT NULL THEN 'triggerAndWait' ELSE 'trigger' END,
       batch, CASE WHEN batch IS NOT NULL THEN pos END, schedule,
       created, COALESCE(finished, started, created), started, finished,
       '00-' || md5(id || 't') || '-' || substr(md5(id || 's'), 1, 16) || '-01',
       h4 % 1000 = 7
     FROM (
       SELECT g.*, CASE WHEN status = 'QUEUED' THEN NULL ELSE created + (h2 % 2000) * interval '1 ms' END AS started,
         CASE WHEN status IN ('QUEUED', 'EXECUTING', 'WAITING') THEN NULL ELSE created + (h2 % 2000 + 50 + h3 % 30000) * interval '1 ms' END AS finished
       FROM (
         SELECT i, pos, id, env, created, h2, h3, h4, tagn, 'tag-' || lpad(tagn::text, 2, '0') AS tag1,
           CASE WHEN scheduled IS NOT NULL THEN 'sched_bench_' || envname || '_' || scheduled END AS schedule,
           CASE WHEN scheduled IS NULL THEN batch END AS batch,
           CASE WHEN scheduled = 'daily' THEN 'nightly-report'
                WHEN scheduled = 'hourly' THEN 'sync-crm'
                WHEN scheduled = 'quarter' THEN 'poll-inbox'
                WHEN ($8::text[])[taskn + 1] = 'legacy-import' AND created_ms > $7::float8 - 8 * 86400000 THEN 'reconcile-ledger'
                ELSE ($8::text[])[taskn + 1] END AS task,
           CASE WHEN u < 50 THEN 'FAILED' WHEN u < 53 THEN 'CANCELED' WHEN u < 55 THEN 'CRASHED' WHEN u < 57 THEN 'TIMED_OUT'
                WHEN u < 72 THEN 'WAITING'
                WHEN u < 82 AND created_ms > $7::float8 - 86400000 THEN 'QUEUED'
                WHEN u < 90 AND created_ms > $7::float8 - 86400000 THEN 'EXECUTING'
                ELSE 'COMPLETED' END AS status,
           CASE WHEN h4 % 20 = 7 AND pos > 0 AND batch IS NULL AND scheduled IS NULL THEN 'run_' || substr(md5((i - 1)::text || 'r'), 1, 21) END AS parent
         FROM (
           SELECT i, i % 100 AS pos, 'run_' || substr(md5(i::text || 'r'), 1, 21) AS id,
             CASE WHEN (i / 100) % 6 = 5 THEN $2 ELSE $1 END AS env, CASE WHEN (i / 100) % 6 = 5 THEN 'prod' ELSE 'dev' END AS envname,
             CASE WHEN (i / 100) % 10 = 3 THEN 'batch_bench_' || (i / 100) END AS batch,
             created_ms, to_timestamp(created_ms / 1000.0) AS created,
             CASE WHEN floor(created_ms / 86400000) > floor(previous_ms / 86400000) THEN 'daily'
                  WHEN floor(created_ms / 3600000) > floor(previous_ms / 3600000) THEN 'hourly'
                  WHEN floor(created_ms / 900000) > floor(previous_ms / 900000) THEN 'quarter' END AS scheduled,
             floor(20 * power(((CASE WHEN (i / 100) % 10 = 3 THEN hashint8extended(i / 100, 1) ELSE hashint8extended(i, 1) END) & 16777215) / 16777216.0, 2))::int AS taskn,
             floor(50 * power((hashint8extended(i, 5) & 16777215) / 16777216.0, 2))::int AS tagn,
             (hashint8extended(i, 2) & 1073741823) AS h2, (hashint8extended(i, 3) & 1073741823) AS h3,
             (hashint8extended(i, 4) & 1073741823) AS h4, (hashint8extended(i, 6) & 1073741823) % 1000 AS u
           FROM generate_series(0::bigint, $4::bigint - 1) AS i,
             LATERAL (SELECT CASE WHEN (i / 100) % 10 = 3 THEN floor($5::float8 + (i - i % 100) * $6::float8) + i % 100
                                  ELSE floor($5::float8 + i * $6::float8) END AS created_ms) AS t,
             -- The previous row's: a run is a schedule's when it is the first after a day/hour/quarter boundary.
             LATERAL (SELECT CASE WHEN ((i - 1) / 100) % 10 = 3 THEN floor($5::float8 + (i - 1 - (i - 1) % 100) * $6::float8) + (i - 1) % 100
                                  ELSE floor($5::float8 + (i - 1) * $6::float8) END AS previous_ms) AS tp
         ) base
       ) g
     ) r`,
    [p.mainEnvironmentId, p.otherEnvironmentId, p.projectId, total, fromMs, stepMs, p.now.getTime(), TASKS],
  );
  await db.query(
    `INSERT INTO batches (id, environment_id, run_count, sealed_at, created_at)
     SELECT batch_id, min(environment_id), count(*), min(created_at), min(created_at) FROM runs WHERE batch_id IS NOT NULL GROUP BY batch_id`,
  );
  // WAITING runs wait on a token: the list shows what each waits on (one more statement per page with any).
  await db.query(
    `INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, created_at)
     SELECT 'waitpoint_' || substr(md5(id || 'w'), 1, 21), environment_id, 'MANUAL', 'WAITING', created_at + interval '30 days', started_at
     FROM runs WHERE status = 'WAITING'`,
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, created_at)
     SELECT id, 0, 'token:approval#1', 'token', 'waitpoint_' || substr(md5(id || 'w'), 1, 21), 'waitpoint_' || substr(md5(id || 'w'), 1, 21), started_at
     FROM runs WHERE status = 'WAITING'`,
  );
  await db.query(
    `INSERT INTO sessions (id, environment_id, type, task_identifier, trigger_config, current_run_id, created_at, updated_at)
     SELECT 'session_bench_' || k, $1, 'chat', 'chat-agent', '{"basePayload":{}}', (array_agg(id ORDER BY created_at DESC))[1], min(created_at), max(created_at)
     FROM (SELECT id, created_at, floor(extract(epoch FROM created_at) / 1200)::bigint AS k FROM runs
           WHERE environment_id = $1 AND task_identifier = 'chat-agent' AND batch_id IS NULL) s
     GROUP BY k`,
    [p.mainEnvironmentId],
  );
  await db.query(
    `INSERT INTO session_runs (session_id, run_id, reason, start_after, created_at)
     SELECT 'session_bench_' || floor(extract(epoch FROM created_at) / 1200)::bigint, id,
       CASE WHEN row_number() OVER (PARTITION BY floor(extract(epoch FROM created_at) / 1200) ORDER BY created_at) = 1 THEN 'create' ELSE 'append' END,
       0, created_at
     FROM runs WHERE environment_id = $1 AND task_identifier = 'chat-agent' AND batch_id IS NULL`,
    [p.mainEnvironmentId],
  );
  // Each version's claims ended a minute after its newest run (migration 0033; the last version's
  // workers are still running): what the workers' claims would have left.
  // (Only where the table exists: the benchmark also runs against builds from before it.)
  const { rows: versionsTable } = await db.query<{ exists: boolean }>(`SELECT to_regclass('worker_versions') IS NOT NULL AS exists`);
  if (versionsTable[0]!.exists) await db.query(
    `INSERT INTO worker_versions (environment_id, version, seen_until)
     SELECT environment_id, worker_version, max(created_at) + interval '1 minute' FROM runs
     WHERE environment_id = ANY($1::text[]) AND worker_version IS NOT NULL GROUP BY environment_id, worker_version
     ON CONFLICT (environment_id, version) DO UPDATE SET seen_until = greatest(worker_versions.seen_until, EXCLUDED.seen_until)`,
    [[p.mainEnvironmentId, p.otherEnvironmentId]],
  );
  // The run list's tag lanes (migration 0032), as the trigger writes them.
  await db.query(
    `INSERT INTO run_tags (environment_id, tag, created_at, run_id)
     SELECT r.environment_id, t.tag, r.created_at, r.id FROM runs r CROSS JOIN LATERAL unnest(r.tags) AS t(tag)
     WHERE r.environment_id = ANY($1::text[]) AND r.tags <> '{}'`,
    [[p.mainEnvironmentId, p.otherEnvironmentId]],
  );
}

/** An attempt row for every started run (one attempt: the preload's runs never retried). */
export async function preloadAttempts(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO run_attempts (run_id, number, status, worker_version, started_at, finished_at)
     SELECT id, 1, CASE WHEN status IN ('COMPLETED', 'FAILED', 'CANCELED', 'CRASHED', 'TIMED_OUT') THEN status ELSE 'EXECUTING' END, worker_version, started_at, finished_at
     FROM runs WHERE started_at IS NOT NULL`,
  );
}

/** Two resolved `step` entries in the ledger of every finished run (the retention scenario's ledger). */
export async function preloadLedgerSteps(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, created_at, resolved_at)
     SELECT id, 0, 'step:' || s || '#1', 'step', 'step-' || s, true, '{"ok":true,"output":"{\\"n\\":1}"}', started_at, started_at
     FROM runs, generate_series(1, 2) s WHERE finished_at IS NOT NULL`,
  );
}

/**
 * A waited-for token in about one finished run in `every` (by a hash of its id): a COMPLETED
 * MANUAL waitpoint (completed during the run, a small JSON output; 30 % tagged with 1–2 of
 * `tok-00` … `tok-19`, 5 % with an idempotency key) and the run's resolved ledger entry for it.
 * The waiting runs' tokens come from preloadRuns.
 */
export async function preloadTokens(db: Queryable, every: number): Promise<void> {
  await db.query(
    `INSERT INTO waitpoints (id, environment_id, type, status, idempotency_key, idempotency_key_user_provided, timeout_at, completed_at, output, output_type, tags, created_at)
     SELECT 'waitpoint_' || substr(md5(id || 'w'), 1, 21), environment_id, 'MANUAL', 'COMPLETED',
       CASE WHEN h % 20 = 3 THEN md5(id || 'ik') END, h % 20 = 3, started_at + interval '1 day', finished_at - interval '10 ms',
       '{"approved":true,"by":"user_' || (h % 1000) || '"}', 'application/json',
       CASE WHEN h % 10 >= 3 THEN '{}'::text[] WHEN h % 2 = 0 THEN ARRAY['tok-' || lpad((h % 20)::text, 2, '0')]
            ELSE ARRAY['tok-' || lpad((h % 20)::text, 2, '0'), 'tok-' || lpad(((h / 20) % 20)::text, 2, '0')] END,
       started_at
     FROM (SELECT id, environment_id, started_at, finished_at, (hashtext(id) & 1073741823) AS h FROM runs WHERE finished_at IS NOT NULL) r
     WHERE (h / 1000) % $1 = 0`,
    [every],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, outcome, created_at, resolved_at)
     SELECT id, 0, 'token:approval#1', 'token', 'waitpoint_' || substr(md5(id || 'w'), 1, 21), 'waitpoint_' || substr(md5(id || 'w'), 1, 21), true,
       '{"ok":true,"output":"{\\"approved\\":true}"}', started_at, finished_at - interval '10 ms'
     FROM (SELECT id, started_at, finished_at, (hashtext(id) & 1073741823) AS h FROM runs WHERE finished_at IS NOT NULL) r
     WHERE (h / 1000) % $1 = 0`,
    [every],
  );
}
