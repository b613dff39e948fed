import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { FINAL_STATUSES } from "../runs/statuses.ts";
import { getBatch } from "./store.ts";

export interface RetrievedBatch {
  id: string;
  /** COMPLETED once the batch is sealed and every run in it has finished. */
  status: "PENDING" | "COMPLETED";
  runCount: number;
  /** Run ids in item order. */
  runs: string[];
  idempotencyKey?: string;
  createdAt: string;
  updatedAt: string;
}

/** GET /api/v2/batches/{id}. */
export async function retrieveBatch(db: Queryable, environmentId: string, batchId: string): Promise<RetrievedBatch> {
  const batch = await getBatch(db, batchId, environmentId);
  if (!batch) throw new NotFoundError("Batch not found");
  const { rows } = await db.query<{ id: string; status: string; updated_at: Date }>(
    // Its own runs and the runs idempotency keys answered items with (batch_members), in item order.
    `SELECT id, status, updated_at FROM (
       SELECT id, status, updated_at, batch_index AS item_index, created_at FROM runs WHERE batch_id = $1
       UNION ALL
       SELECT r.id, r.status, r.updated_at, m.batch_index, r.created_at FROM batch_members m JOIN runs r ON r.id = m.run_id WHERE m.batch_id = $1) items
     ORDER BY item_index, created_at`,
    [batch.id],
  );
  const allFinished = rows.every((r) => (FINAL_STATUSES as readonly string[]).includes(r.status));
  const times = [batch.created_at, batch.sealed_at, ...rows.map((r) => r.updated_at)].filter((d): d is Date => d !== null);
  const updatedAt = new Date(Math.max(...times.map((d) => d.getTime())));
  const result: RetrievedBatch = {
    id: batch.id,
    status: batch.sealed_at !== null && allFinished ? "COMPLETED" : "PENDING",
    runCount: batch.run_count,
    runs: rows.map((r) => r.id),
    createdAt: batch.created_at.toISOString(),
    updatedAt: updatedAt.toISOString(),
  };
  const key = batch.idempotency_key_user ?? batch.idempotency_key;
  if (key) result.idempotencyKey = key;
  return result;
}
