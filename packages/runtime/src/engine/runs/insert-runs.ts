import { isUniqueViolation, preparedText, type Queryable } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";
import type { Environment } from "../tenancy/environments.ts";
import type { RunPlan } from "./plan-run.ts";
import type { RunRow } from "./store.ts";

const COLUMNS = [
  "id", "environment_id", "project_id", "task_identifier", "status", "queue_name", "concurrency_key", "payload", "payload_type",
  "idempotency_key", "idempotency_key_user", "idempotency_key_expires_at", "tags", "metadata", "max_attempts", "max_duration_s",
  "ttl", "expire_at", "delay_until", "parent_run_id", "root_run_id", "depth", "trigger_function", "batch_id", "batch_index",
  "schedule_id", "is_test", "created_at", "updated_at", "one_time_use_token", "traceparent", "claim_from_runs", "idempotency_key_scope", "ledger_epoch",
];
/** What triggering needs back from an inserted run (fewer columns: less to send and parse). */
const RETURNED = ["id", "status", "queue_name", "concurrency_key", "claim_from_runs"] as const;
export type InsertedRun = Pick<RunRow, (typeof RETURNED)[number]>;
/** The end of the INSERT of a chunk with tags: the run list's tag lanes (migration 0032), one row per tag of each run made. */
const TAGGED_TAIL = `, tags, created_at),
         tagged AS (INSERT INTO run_tags (environment_id, tag, created_at, run_id)
           SELECT $27, t.tag, i.created_at, i.id FROM inserted i CROSS JOIN LATERAL unnest(i.tags) AS t(tag) WHERE i.tags <> '{}')
         SELECT ${RETURNED.join(", ")} FROM inserted`;
/** Runs per INSERT statement. */
const CHUNK = 1000;

/** Fills in each plan's default queue: the queue its task's worker registered, else task/<id>. One query. */
export async function resolveDefaultQueues(db: Queryable, environmentId: string, plans: RunPlan[]): Promise<void> {
  const missing = [...new Set(plans.filter((p) => p.queueName === null).map((p) => p.taskIdentifier))];
  if (missing.length === 0) return;
  const { rows } = await db.query<{ task_identifier: string; queue_name: string }>(
    `SELECT task_identifier, queue_name FROM worker_tasks WHERE environment_id = $1 AND task_identifier = ANY($2::text[])`,
    [environmentId, missing],
  );
  const registered = new Map(rows.map((r) => [r.task_identifier, r.queue_name]));
  for (const plan of plans) plan.queueName ??= registered.get(plan.taskIdentifier) ?? `task/${plan.taskIdentifier}`;
}

/**
 * Inserts planned runs in one statement per 1,000: every column travels as one array parameter
 * and `unnest` zips them into rows, so the statement text is constant (prepared once) however many
 * runs there are. A run whose idempotency key another transaction took meanwhile is skipped
 * (ON CONFLICT DO NOTHING); only inserted rows are returned (the columns triggering needs).
 */
export async function insertRuns(db: Queryable, env: Environment, plans: RunPlan[]): Promise<InsertedRun[]> {
  const inserted: InsertedRun[] = [];
  for (let start = 0; start < plans.length; start += CHUNK) {
    const chunk = plans.slice(start, start + CHUNK);
    // Runs with tags also get their rows of run_tags in the same statement; a chunk without tags
    // runs the plain INSERT (a data-modifying CTE costs a single trigger ~10 % even when it writes
    // nothing, measured when this was written: see its commit).
    const withTags = chunk.some((p) => p.tags.length > 0);
    const col = <T>(pick: (p: RunPlan) => T) => chunk.map(pick);
    const { rows } = await db.query<InsertedRun>(
      preparedText(
        `${withTags ? "WITH inserted AS (" : ""}INSERT INTO runs (${COLUMNS.join(", ")})
         SELECT u.id, $27, $28, u.task_identifier, u.status, u.queue_name, u.concurrency_key, u.payload, u.payload_type,
           u.idempotency_key, u.idempotency_key_user, u.idempotency_key_expires_at,
           CASE WHEN u.tags = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags)) END, u.metadata::jsonb, u.max_attempts, u.max_duration_s,
           u.ttl, u.expire_at, u.delay_until, u.parent_run_id, u.root_run_id, u.depth, u.trigger_function, u.batch_id,
           u.batch_index, u.schedule_id, u.is_test, u.created_at, u.created_at, u.one_time_use_token, u.traceparent,
           -- The plain claim takes it unless its queue has a concurrencyLimit (migration 0036). A
           -- concurrency key only splits a limit: in a queue without one it changes nothing.
           NOT (SELECT q.limited FROM svc_queue_is_limited($27, u.queue_name) q),
           u.idempotency_key_scope, u.ledger_epoch
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
           $10::timestamptz[], $11::jsonb[], $12::text[], $13::int[], $14::int[], $15::text[], $16::timestamptz[], $17::timestamptz[],
           $18::text[], $19::text[], $20::int[], $21::text[], $22::text[], $23::int[], $24::text[], $25::boolean[], $26::timestamptz[], $29::text[], $30::text[], $31::text[], $32::int[])
           AS u(id, task_identifier, status, queue_name, concurrency_key, payload, payload_type, idempotency_key, idempotency_key_user,
             idempotency_key_expires_at, tags, metadata, max_attempts, max_duration_s, ttl, expire_at, delay_until,
             parent_run_id, root_run_id, depth, trigger_function, batch_id, batch_index, schedule_id, is_test, created_at,
             one_time_use_token, traceparent, idempotency_key_scope, ledger_epoch)
         ON CONFLICT (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING ${RETURNED.join(", ")}${withTags ? TAGGED_TAIL : ""}`,
        [
          col((p) => p.id),
          col((p) => p.taskIdentifier),
          col((p) => p.status),
          col((p) => p.queueName),
          col((p) => p.concurrencyKey),
          col((p) => p.packet.data),
          col((p) => p.packet.type),
          col((p) => p.idempotencyKey),
          col((p) => p.idempotencyKeyUser),
          col((p) => p.idempotencyKeyExpiresAt),
          col((p) => JSON.stringify(p.tags)),
          col((p) => p.metadata),
          col((p) => p.maxAttempts),
          col((p) => p.maxDurationS),
          col((p) => p.ttl),
          col((p) => p.expireAt),
          col((p) => p.delayUntil),
          col((p) => p.parent?.id ?? null),
          col((p) => (p.parent ? (p.parent.root_run_id ?? p.parent.id) : null)),
          col((p) => (p.parent ? p.parent.depth + 1 : 0)),
          col((p) => p.lineage.triggerFunction ?? "trigger"),
          col((p) => p.lineage.batchId ?? null),
          col((p) => p.lineage.batchIndex ?? null),
          col((p) => p.lineage.scheduleId ?? null),
          col((p) => p.isTest),
          col((p) => p.createdAt),
          env.id,
          env.projectId,
          col((p) => p.lineage.oneTimeUseToken ?? null),
          col((p) => p.lineage.traceparent ?? null),
          col((p) => p.idempotencyKeyScope),
          col((p) => p.lineage.ledgerEpoch ?? 0),
        ],
      ),
    ).catch((error: unknown) => {
      if (isUniqueViolation(error, "runs_one_time_use_token")) {
        const task = chunk.find((p) => p.lineage.oneTimeUseToken)?.taskIdentifier ?? "the task";
        throw new UnprocessableError(`Cannot trigger ${task} with a one-time use token as it has already been used.`);
      }
      throw error;
    });
    inserted.push(...rows);
  }
  return inserted;
}
