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
  /**
   * How creating its runs went (the SDK's batch.retrieve requires it): done once every item has a
   * run (sealed). An item that cannot become a run is refused with its request, so none is listed
   * as failed here.
   */
  processing: { completedAt?: string; errors: { index: number; taskIdentifier: string; error: string; errorCode?: string }[] };
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
    processing: { ...(batch.sealed_at ? { completedAt: batch.sealed_at.toISOString() } : {}), errors: [] },
  };
  const key = batch.idempotency_key_user ?? batch.idempotency_key;
  if (key) result.idempotencyKey = key;
  return result;
}
