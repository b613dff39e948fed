import type { Queryable } from "../../db/queryable.ts";
import type { WaitpointStatus, WaitpointType } from "./statuses.ts";

export interface WaitpointRow {
  id: string;
  environment_id: string;
  type: WaitpointType;
  status: WaitpointStatus;
  idempotency_key: string | null;
  idempotency_key_user_provided: boolean;
  idempotency_key_expires_at: Date | null;
  inactive_idempotency_key: string | null;
  timeout_at: Date | null;
  completed_at: Date | null;
  output: string | null;
  output_type: string | null;
  output_is_error: boolean;
  tags: string[];
  completed_by_run_id: string | null;
  completed_by_batch_id: string | null;
  created_at: Date;
}

export async function getWaitpoint(db: Queryable, id: string, environmentId?: string): Promise<WaitpointRow | null> {
  const { rows } = environmentId
    ? await db.query<WaitpointRow>(`SELECT * FROM waitpoints WHERE id = $1 AND environment_id = $2`, [id, environmentId])
    : await db.query<WaitpointRow>(`SELECT * FROM waitpoints WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export interface NewWaitpoint {
  id: string;
  environmentId: string;
  type: WaitpointType;
  timeoutAt?: Date | null;
  idempotencyKey?: string | null;
  idempotencyKeyUserProvided?: boolean;
  idempotencyKeyExpiresAt?: Date | null;
  tags?: string[];
  completedByRunId?: string | null;
  completedByBatchId?: string | null;
  createdAt: Date;
}

export async function insertWaitpoint(db: Queryable, w: NewWaitpoint): Promise<WaitpointRow> {
  const { rows } = await db.query<WaitpointRow>(
    `INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, idempotency_key, idempotency_key_user_provided,
       idempotency_key_expires_at, tags, completed_by_run_id, completed_by_batch_id, created_at)
     VALUES ($1, $2, $3, 'WAITING', $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
    [
      w.id,
      w.environmentId,
      w.type,
      w.timeoutAt ?? null,
      w.idempotencyKey ?? null,
      w.idempotencyKeyUserProvided ?? false,
      w.idempotencyKeyExpiresAt ?? null,
      w.tags ?? [],
      w.completedByRunId ?? null,
      w.completedByBatchId ?? null,
      w.createdAt,
    ],
  );
  return rows[0]!;
}
