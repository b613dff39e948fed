import type { Queryable } from "../../db/queryable.ts";
import type { Environment } from "../tenancy/environments.ts";
import type { RunPlan } from "./plan-run.ts";
import type { RunRow } from "./store.ts";

const COLUMNS = [
  "id", "environment_id", "project_id", "task_identifier", "status", "queue_name", "concurrency_key", "payload", "payload_type",
  "idempotency_key", "idempotency_key_user", "idempotency_key_expires_at", "tags", "metadata", "max_attempts", "max_duration_s",
  "ttl", "expire_at", "delay_until", "parent_run_id", "root_run_id", "depth", "trigger_function", "batch_id", "batch_index",
  "schedule_id", "is_test", "created_at", "updated_at",
];
/** Rows per INSERT statement (29 parameters each, well under Postgres's 65,535). */
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
 * Inserts planned runs with multi-row INSERTs. A run whose idempotency key another transaction
 * took meanwhile is skipped (ON CONFLICT DO NOTHING); only inserted rows are returned.
 */
export async function insertRuns(db: Queryable, env: Environment, plans: RunPlan[]): Promise<RunRow[]> {
  const inserted: RunRow[] = [];
  for (let start = 0; start < plans.length; start += CHUNK) {
    const chunk = plans.slice(start, start + CHUNK);
    const values: unknown[] = [];
    const tuples = chunk.map((p) => {
      const row = [
        p.id, env.id, env.projectId, p.taskIdentifier, p.status, p.queueName, p.concurrencyKey, p.packet.data, p.packet.type,
        p.idempotencyKey, p.idempotencyKeyUser, p.idempotencyKeyExpiresAt, p.tags, p.metadata, p.maxAttempts, p.maxDurationS,
        p.ttl, p.expireAt, p.delayUntil, p.parent?.id ?? null, p.parent ? (p.parent.root_run_id ?? p.parent.id) : null,
        p.parent ? p.parent.depth + 1 : 0, p.lineage.triggerFunction ?? "trigger", p.lineage.batchId ?? null,
        p.lineage.batchIndex ?? null, p.lineage.scheduleId ?? null, p.isTest, p.createdAt, p.createdAt,
      ];
      const base = values.length;
      values.push(...row);
      return `(${row.map((_, i) => `$${base + i + 1}`).join(", ")})`;
    });
    const { rows } = await db.query<RunRow>(
      `INSERT INTO runs (${COLUMNS.join(", ")}) VALUES ${tuples.join(", ")}
       ON CONFLICT (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
       RETURNING *`,
      values,
    );
    inserted.push(...rows);
  }
  return inserted;
}
