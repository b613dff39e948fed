import { isUniqueViolation, type Queryable } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";

/** A batches row: a group of runs triggered together, possibly in several item requests. */
export interface BatchRow {
  id: string;
  environment_id: string;
  run_count: number;
  idempotency_key: string | null;
  idempotency_key_user: string | null;
  parent_run_id: string | null;
  resume_parent_on_completion: boolean;
  /** Set once every index 0..run_count-1 has a run. */
  sealed_at: Date | null;
  created_at: Date;
}

export interface NewBatch {
  id: string;
  environmentId: string;
  runCount: number;
  idempotencyKey?: string | null;
  idempotencyKeyUser?: string | null;
  parentRunId?: string | null;
  resumeParentOnCompletion?: boolean;
  sealedAt?: Date | null;
  createdAt: Date;
  /** The SHA-256 of the one-time-use public token that created the batch: a second use is refused. */
  oneTimeUseToken?: string | null;
}

export async function getBatch(db: Queryable, id: string, environmentId: string, options: { forUpdate?: boolean } = {}): Promise<BatchRow | null> {
  const { rows } = await db.query<BatchRow>(
    `SELECT * FROM batches WHERE id = $1 AND environment_id = $2${options.forUpdate ? " FOR UPDATE" : ""}`,
    [id, environmentId],
  );
  return rows[0] ?? null;
}

export async function findBatchByIdempotencyKey(db: Queryable, environmentId: string, key: string): Promise<BatchRow | null> {
  const { rows } = await db.query<BatchRow>(`SELECT * FROM batches WHERE environment_id = $1 AND idempotency_key = $2`, [environmentId, key]);
  return rows[0] ?? null;
}

/**
 * Inserts a batch; null when another batch of the environment already holds the idempotency key.
 * A one-time-use token that already created a batch is a 422.
 */
export async function insertBatch(db: Queryable, batch: NewBatch): Promise<BatchRow | null> {
  const { rows } = await db.query<BatchRow>(
    `INSERT INTO batches (id, environment_id, run_count, idempotency_key, idempotency_key_user, parent_run_id,
       resume_parent_on_completion, sealed_at, created_at, one_time_use_token)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING *`,
    [
      batch.id,
      batch.environmentId,
      batch.runCount,
      batch.idempotencyKey ?? null,
      batch.idempotencyKeyUser ?? null,
      batch.parentRunId ?? null,
      batch.resumeParentOnCompletion ?? false,
      batch.sealedAt ?? null,
      batch.createdAt,
      batch.oneTimeUseToken ?? null,
    ],
  ).catch((error: unknown) => {
    if (isUniqueViolation(error, "batches_one_time_use_token")) throw new UnprocessableError("Cannot trigger a batch with a one-time use token as it has already been used.");
    throw error;
  });
  return rows[0] ?? null;
}

/** The item indexes that already have a run in this batch. */
export async function batchRunIndexes(db: Queryable, batchId: string): Promise<Set<number>> {
  const { rows } = await db.query<{ batch_index: number }>(
    `SELECT batch_index FROM runs WHERE batch_id = $1 AND batch_index IS NOT NULL
     UNION SELECT batch_index FROM batch_members WHERE batch_id = $1`,
    [batchId],
  );
  return new Set(rows.map((r) => r.batch_index));
}

/** Guarded: only the first caller seals. */
export async function sealBatch(db: Queryable, batchId: string, now: Date): Promise<void> {
  await db.query(`UPDATE batches SET sealed_at = $2 WHERE id = $1 AND sealed_at IS NULL`, [batchId, now]);
}
