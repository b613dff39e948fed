import { isUniqueViolation, preparedText, type Queryable } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";
import { CHANNELS } from "../channels.ts";
import type { Environment } from "../tenancy/environments.ts";
import type { RunPlan } from "./plan-run.ts";
import type { RunRow } from "./store.ts";
import { wakeCtes } from "./wake-workers.ts";
import { MAX_START_OFFERS, OFFER_START, pickStartWorker, SEND_START_OFFER, START_OFFER_CLAIM } from "./transitions/offer-start.ts";

const COLUMNS = [
  "id", "environment_id", "project_id", "task_identifier", "status", "queue_name", "concurrency_key", "payload", "payload_type",
  "idempotency_key", "idempotency_key_user", "idempotency_key_expires_at", "tags", "metadata", "max_attempts", "max_duration_s",
  "ttl", "expire_at", "delay_until", "parent_run_id", "root_run_id", "depth", "trigger_function", "batch_id", "batch_index",
  "schedule_id", "is_test", "created_at", "updated_at", "one_time_use_token", "traceparent", "claim_from_runs", "idempotency_key_scope", "ledger_epoch",
  "rate_limit_key", "concurrency_limits", "gates", "rate_limit", "rate_period_ms",
  // An offered start's claim (offer-start.ts); NULL, 0 or false for any other run.
  "attempt_number", "claim_token", "worker_id", "worker_version", "lease_expires_at", "offered_at", "offered_start", "started_at",
];
/** What triggering needs back from an inserted run (fewer columns: less to send and parse). */
const RETURNED = ["id", "status", "queue_name", "concurrency_key", "claim_from_runs"] as const;
export type InsertedRun = Pick<RunRow, (typeof RETURNED)[number]>;
/** Runs per INSERT statement. */
const CHUNK = 1000;

/**
 * Inserts planned runs in one statement per 1,000, and with `offer` hands each first attempt that
 * can start at once to a free worker of its task in the same statement (offer-start.ts): such a run
 * is inserted EXECUTING, offered, and its worker hears of it when the statement's transaction
 * commits. The runs travel as one JSON parameter (json_to_recordset), so the statement text is
 * constant (prepared once, planned once) however many runs there are. A plan without a queue
 * gets its task's registered queue (else task/<id>), and every plan the concurrency limits its
 * task's code declares (unless the trigger names its own), looked up in the statement. A run whose
 * idempotency key another transaction took meanwhile is skipped (ON CONFLICT DO NOTHING); only
 * inserted rows are returned (the columns triggering needs), QUEUED, DELAYED or (offered) EXECUTING.
 * Offers go only to a chunk of at most MAX_START_OFFERS runs: a larger batch is left to the claims
 * of workers, which take as many as they have slots for. With `offer`, the same statement wakes the
 * workers of the queues whose QUEUED runs it did not offer (wakeWorkers' choice, as CTEs): a run
 * that waits for a slot costs its trigger no second statement.
 */
export async function insertRuns(db: Queryable, env: Environment, plans: RunPlan[], now: Date, options: { offer: boolean }): Promise<InsertedRun[]> {
  const inserted: InsertedRun[] = [];
  for (let start = 0; start < plans.length; start += CHUNK) {
    const chunk = plans.slice(start, start + CHUNK);
    // Runs with tags also get their rows of run_tags in the same statement; a chunk without tags
    // runs the statement without that CTE (a data-modifying CTE costs a single trigger ~10 % even
    // when it writes nothing, measured when this was written: see its commit).
    const withTags = chunk.some((p) => p.tags.length > 0);
    // One JSON parameter: V8 writes it natively, and its row count is as unknown to the planner
    // with a value as without one, so the prepared statement gets the generic plan (planning this
    // statement anew costs more than running it: 1.7 ms against 1.5, measured when this was
    // written; one array per column let the planner count a value's rows and plan every call).
    const input = chunk.map((p) => ({
      id: p.id,
      task_identifier: p.taskIdentifier,
      status: p.status,
      queue_name: p.queueName,
      concurrency_key: p.concurrencyKey,
      payload: p.packet.data,
      payload_type: p.packet.type,
      idempotency_key: p.idempotencyKey,
      idempotency_key_user: p.idempotencyKeyUser,
      idempotency_key_expires_at: timestampText(p.idempotencyKeyExpiresAt),
      tags: p.tags,
      metadata: p.metadata,
      max_attempts: p.maxAttempts,
      max_duration_s: p.maxDurationS,
      ttl: p.ttl,
      expire_at: timestampText(p.expireAt),
      delay_until: timestampText(p.delayUntil),
      parent_run_id: p.parent?.id ?? null,
      root_run_id: p.parent ? (p.parent.root_run_id ?? p.parent.id) : null,
      depth: p.parent ? p.parent.depth + 1 : 0,
      trigger_function: p.lineage.triggerFunction ?? "trigger",
      batch_id: p.lineage.batchId ?? null,
      batch_index: p.lineage.batchIndex ?? null,
      schedule_id: p.lineage.scheduleId ?? null,
      is_test: p.isTest,
      created_at: timestampText(p.createdAt),
      one_time_use_token: p.lineage.oneTimeUseToken ?? null,
      traceparent: p.lineage.traceparent ?? null,
      idempotency_key_scope: p.idempotencyKeyScope,
      ledger_epoch: p.lineage.ledgerEpoch ?? 0,
      rate_limit_key: p.rateLimitKey,
      concurrency_limits: p.concurrencyLimits,
      // Absent for a plain run (json_to_recordset reads NULL): its JSON is as before gates.
      ...(p.gates === null ? {} : { gates: p.gates }),
      ...(p.ownRate === null ? {} : { rate_limit: p.ownRate.limit, rate_period_ms: p.ownRate.periodMs }),
    }));
    const { rows } = await db.query<InsertedRun>(
      preparedText(
        `WITH u AS (
           -- The task's registration gives a run without a queue its queue, and the concurrency limits
           -- its code declares (migration 0050): the trigger's own named limits replace the declared
           -- named ones, never the task's inline limit (task/<id>).
           SELECT u.*, coalesce(u.queue_name, wt.queue_name, 'task/' || u.task_identifier) AS queue,
             CASE WHEN u.concurrency_limits IS NULL THEN wt.concurrency_limits
                  WHEN 'task/' || u.task_identifier = ANY (wt.concurrency_limits) THEN u.concurrency_limits || ('task/' || u.task_identifier)
                  ELSE u.concurrency_limits END AS limits
           FROM json_to_recordset($1::json) AS u(id text, task_identifier text, status text, queue_name text, concurrency_key text,
             payload text, payload_type text, idempotency_key text, idempotency_key_user text, idempotency_key_expires_at timestamptz,
             tags text[], metadata text, max_attempts int, max_duration_s int, ttl text, expire_at timestamptz, delay_until timestamptz,
             parent_run_id text, root_run_id text, depth int, trigger_function text, batch_id text, batch_index int, schedule_id text,
             is_test boolean, created_at timestamptz, one_time_use_token text, traceparent text, idempotency_key_scope text, ledger_epoch int, rate_limit_key text, concurrency_limits text[], gates jsonb,
             rate_limit int, rate_period_ms int)
           -- A lookup by primary key per run (LIMIT 1 keeps the planner from hashing the whole table).
           LEFT JOIN LATERAL (
             SELECT wt.queue_name, wt.concurrency_limits FROM worker_tasks wt
             WHERE wt.environment_id = $2 AND wt.task_identifier = u.task_identifier LIMIT 1) wt ON true),
         -- The plain claim takes a run unless its queue has a concurrencyLimit (migration 0036) or a
         -- rateLimit (0047), or an operator paused it or overrode its limit (0046). A concurrency or
         -- rate key only splits a limit: in a queue without one it changes nothing. (What
         -- svc_queue_is_limited says, written out: that function is not inlined here, and planning
         -- its body on every call cost a fifth of this statement.) A run that holds a named
         -- concurrency limit (migration 0048), has gates (0049) or its own rate (0055) is always
         -- the limited claim's.
         p AS MATERIALIZED (
           SELECT u.*, u.limits IS NULL AND u.gates IS NULL AND u.rate_limit IS NULL AND NOT EXISTS (
             SELECT 1 FROM worker_tasks wt WHERE wt.environment_id = $2 AND wt.queue_name = u.queue
               AND (wt.concurrency_limit IS NOT NULL OR wt.rate_limit IS NOT NULL))
             AND NOT EXISTS (
             SELECT 1 FROM queues q WHERE q.environment_id = $2 AND q.name = u.queue AND (q.paused OR q.concurrency_limit_override IS NOT NULL)) AS plain
           FROM u),
         planned AS (
           SELECT p.*, w.id AS offered_to, w.version AS offered_version, w.lease_ms AS offered_lease_ms FROM p
           LEFT JOIN LATERAL (${pickStartWorker("$5", "$2", "$4")}) w ON true),
         inserted AS (
           INSERT INTO runs (${COLUMNS.join(", ")})
           SELECT u.id, $2, $3, u.task_identifier, CASE WHEN u.offered_to IS NULL THEN u.status ELSE '${OFFER_START.to}' END,
             u.queue, u.concurrency_key, u.payload, u.payload_type, u.idempotency_key, u.idempotency_key_user, u.idempotency_key_expires_at,
             u.tags, u.metadata::jsonb, u.max_attempts, u.max_duration_s,
             u.ttl, u.expire_at, u.delay_until, u.parent_run_id, u.root_run_id, u.depth, u.trigger_function, u.batch_id,
             u.batch_index, u.schedule_id, u.is_test, u.created_at, u.created_at, u.one_time_use_token, u.traceparent, u.plain, u.idempotency_key_scope, u.ledger_epoch,
             u.rate_limit_key, u.limits, u.gates, u.rate_limit, u.rate_period_ms,
             CASE WHEN u.offered_to IS NULL THEN 0 ELSE 1 END, CASE WHEN u.offered_to IS NOT NULL THEN gen_random_uuid()::text END,
             u.offered_to, u.offered_version,
             CASE WHEN u.offered_to IS NOT NULL THEN $4::timestamptz + make_interval(secs => u.offered_lease_ms / 1000.0) END,
             CASE WHEN u.offered_to IS NOT NULL THEN $4::timestamptz END, u.offered_to IS NOT NULL,
             CASE WHEN u.offered_to IS NOT NULL THEN $4::timestamptz END
           FROM planned u
           ON CONFLICT (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
           RETURNING ${RETURNED.join(", ")}, tags, created_at, worker_id, worker_version, claim_token, ${START_OFFER_CLAIM} AS offer,
             concurrency_limits IS NOT NULL OR gates IS NOT NULL OR rate_limit IS NOT NULL AS tells_queues)${
             withTags
               ? `,
         tagged AS (INSERT INTO run_tags (environment_id, tag, created_at, run_id)
           SELECT $2, t.tag, i.created_at, i.id FROM inserted i CROSS JOIN LATERAL unnest(i.tags) AS t(tag) WHERE i.tags <> '{}')`
               : ""
           },
         version_seen AS (
           -- As a worker's own claim does (engine/workers/worker-versions.ts).
           UPDATE worker_versions v SET seen_until = $4::timestamptz + interval '1 minute'
           FROM (SELECT DISTINCT worker_version FROM inserted WHERE worker_id IS NOT NULL) s
           WHERE v.environment_id = $2 AND v.version = s.worker_version AND v.seen_until < $4::timestamptz + interval '30 seconds'),
         -- Runs that hold a named concurrency limit, have gates or their own rate are claimed by their
         -- queue's limited claim, which a worker runs (with the named limits' or the gate queues'
         -- locks; with a timer for the next rate slot) only for the queues it knows to have such
         -- runs: the environment's workers are told to look again. Runs that hold only the limits
         -- their task declares need no word: the workers serving the task know its queue.
         told AS (SELECT count(pg_notify('${CHANNELS.queuesChanged}', $2)) AS n FROM (SELECT 1 FROM inserted WHERE tells_queues LIMIT 1) t)
         ${
           options.offer
             ? `,
         -- The queued runs no worker was offered: their queues' workers are woken (wake-workers.ts).
         wanted AS (SELECT $2::text AS environment_id, i.queue_name AS queue, count(*)::int AS runs FROM inserted i WHERE i.status = 'QUEUED' GROUP BY i.queue_name),
         ${wakeCtes("$4::timestamptz")}`
             : ""
         }
         SELECT ${RETURNED.map((c) => `i.${c}`).join(", ")}, CASE WHEN i.offer IS NOT NULL THEN ${SEND_START_OFFER} END AS offered FROM inserted i CROSS JOIN told${options.offer ? " CROSS JOIN woke" : ""}`,
        [JSON.stringify(input), env.id, env.projectId, now, options.offer && chunk.length <= MAX_START_OFFERS],
      ),
    ).catch((error: unknown) => {
      if (isUniqueViolation(error, "runs_one_time_use_token")) {
        const task = chunk.find((p) => p.lineage.oneTimeUseToken)?.taskIdentifier ?? "the task";
        throw new UnprocessableError(`Cannot trigger ${task} with a one-time use token as it has already been used.`);
      }
      throw error;
    });
    for (const { offered: _, ...row } of rows as (InsertedRun & { offered: unknown })[]) inserted.push(row);
  }
  return inserted;
}

/**
 * A date as Postgres reads it from JSON: ISO 8601, but a year past 9999 without the sign JavaScript
 * writes before it (`+275760-09-13…`, which Postgres takes for a time zone).
 */
function timestampText(date: Date | null): string | null {
  return date === null ? null : date.toISOString().replace(/^\+/, "");
}
