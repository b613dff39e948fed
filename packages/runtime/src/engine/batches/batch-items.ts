import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { BatchItem } from "../../contracts/batches.ts";
import type { EngineDeps } from "../deps.ts";
import { triggerRunInTransaction } from "../runs/trigger.ts";
import type { Environment } from "../tenancy/environments.ts";
import { batchRunIndexes, getBatch, sealBatch, type BatchRow } from "./store.ts";

export interface BatchItemsResult {
  id: string;
  /** Items of this request that triggered (or joined, when idempotent) a run. */
  itemsAccepted: number;
  /** Items whose index already had a run: nothing was created for them. */
  itemsDeduplicated: number;
  /** True once every index 0..runCount-1 has a run. */
  sealed: boolean;
  enqueuedCount: number;
  expectedCount: number;
  /** Run id per index accepted in this request. */
  runIds: Map<number, string>;
}

/**
 * Phase 2 of a streamed batch: triggers one run per item, idempotent by item index (a re-sent index
 * creates nothing). The batch row is locked for the whole request, so concurrent streams for the
 * same batch cannot both create the same index.
 */
export async function addBatchItems(
  deps: Pick<EngineDeps, "db" | "clock" | "dispatcher">,
  env: Environment,
  batchId: string,
  items: BatchItem[],
): Promise<BatchItemsResult> {
  return withTransaction(deps.db, async (tx) => {
    const batch = await getBatch(tx, batchId, env.id, { forUpdate: true });
    if (!batch) throw new NotFoundError("Batch not found");
    return addBatchItemsInTransaction(deps, tx, env, batch, items);
  });
}

export async function addBatchItemsInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  batch: BatchRow,
  items: BatchItem[],
): Promise<BatchItemsResult> {
  const outOfRange = items.find((item) => item.index >= batch.run_count);
  if (outOfRange) {
    throw new ValidationError(`index ${outOfRange.index} is out of range: batch ${batch.id} has runCount ${batch.run_count} (indexes 0..${batch.run_count - 1})`);
  }
  const withNul = items.find((item) => containsNul(item.options));
  if (withNul) throw new ValidationError(`item ${withNul.index}: options must not contain NUL characters`);
  const present = await batchRunIndexes(tx, batch.id);
  const runIds = new Map<number, string>();
  let itemsAccepted = 0;
  let itemsDeduplicated = 0;
  for (const item of items) {
    if (present.has(item.index) || runIds.has(item.index)) {
      itemsDeduplicated++;
      continue;
    }
    const result = await triggerItem(deps, tx, env, batch, item);
    runIds.set(item.index, result.id);
    itemsAccepted++;
  }
  // An item whose idempotency key matched a run outside this batch counts as present for this
  // request (the run is not re-linked to the batch; the SDK sends all items in one request).
  for (const index of runIds.keys()) present.add(index);
  const sealed = batch.sealed_at !== null || present.size >= batch.run_count;
  if (sealed && batch.sealed_at === null) await sealBatch(tx, batch.id, deps.clock.now());
  return {
    id: batch.id,
    itemsAccepted,
    itemsDeduplicated,
    sealed,
    enqueuedCount: batch.sealed_at !== null ? batch.run_count : present.size,
    expectedCount: batch.run_count,
    runIds,
  };
}

async function triggerItem(deps: Pick<EngineDeps, "clock" | "dispatcher">, tx: Queryable, env: Environment, batch: BatchRow, item: BatchItem) {
  try {
    return await triggerRunInTransaction(deps, tx, env, item.task, item.payload, item.options ?? {}, {
      batchId: batch.id,
      batchIndex: item.index,
      triggerFunction: batch.resume_parent_on_completion ? "batchTriggerAndWait" : "batchTrigger",
      ...(batch.parent_run_id ? { parentRunId: batch.parent_run_id } : {}),
    });
  } catch (error) {
    const where = `item ${item.index} (task ${item.task})`;
    if (error instanceof ValidationError) throw new ValidationError(`${where}: ${error.message}`, { cause: error });
    if (error instanceof UnprocessableError) throw new UnprocessableError(`${where}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** Postgres text and jsonb cannot hold NUL: refuse it as bad input instead of failing in SQL. */
function containsNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(containsNul);
  if (value !== null && typeof value === "object") return Object.entries(value).some(([k, v]) => k.includes("\u0000") || containsNul(v));
  return false;
}
