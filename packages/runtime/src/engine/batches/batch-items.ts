import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { BatchItem } from "../../contracts/batches.ts";
import type { EngineDeps } from "../deps.ts";
import { triggerRunsInTransaction } from "../runs/trigger.ts";
import type { Environment } from "../tenancy/environments.ts";
import { batchRunIndexes, getBatch, sealBatch, type BatchRow } from "./store.ts";

export interface BatchItemsResult {
  id: string;
  /** Items of this request that triggered (or joined, when idempotent) a run. */
  itemsAccepted: number;
  /** Of those, the runs created (an item an idempotency key answered with an existing run created none). */
  runsCreated: number;
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
  trace: { traceparent?: string } = {},
): Promise<BatchItemsResult> {
  return withTransaction(deps.db, async (tx) => {
    const batch = await getBatch(tx, batchId, env.id, { forUpdate: true });
    if (!batch) throw new NotFoundError("Batch not found");
    return addBatchItemsInTransaction(deps, tx, env, batch, items, trace);
  });
}

export async function addBatchItemsInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  batch: BatchRow,
  items: BatchItem[],
  /** Traces on: the span the items' runs are children of (the request that added them). */
  trace: { traceparent?: string } = {},
): Promise<BatchItemsResult> {
  const outOfRange = items.find((item) => item.index >= batch.run_count);
  if (outOfRange) {
    throw new ValidationError(`index ${outOfRange.index} is out of range: batch ${batch.id} has runCount ${batch.run_count} (indexes 0..${batch.run_count - 1})`);
  }
  const withNul = items.find((item) => containsNul(item.options));
  if (withNul) throw new ValidationError(`item ${withNul.index}: options must not contain NUL characters`);
  const present = await batchRunIndexes(tx, batch.id);
  const fresh: BatchItem[] = [];
  const seen = new Set<number>();
  let itemsDeduplicated = 0;
  for (const item of items) {
    if (present.has(item.index) || seen.has(item.index)) {
      itemsDeduplicated++;
      continue;
    }
    seen.add(item.index);
    fresh.push(item);
  }
  // All new items in one multi-row insert and one enqueue per queue.
  const results = await triggerRunsInTransaction(
    deps,
    tx,
    env,
    fresh.map((item) => ({
      taskIdentifier: item.task,
      payload: item.payload,
      options: item.options ?? {},
      lineage: {
        batchId: batch.id,
        batchIndex: item.index,
        triggerFunction: batch.resume_parent_on_completion ? "batchTriggerAndWait" : "batchTrigger",
        ...(batch.parent_run_id ? { parentRunId: batch.parent_run_id } : {}),
        ...(trace.traceparent ? { traceparent: trace.traceparent } : {}),
      },
    })),
    (i) => `item ${fresh[i]!.index} (task ${fresh[i]!.task})`,
  ).catch((error) => {
    // A single item is not labelled by the bulk call; label it here.
    if (fresh.length === 1) throw labelled(error, `item ${fresh[0]!.index} (task ${fresh[0]!.task})`);
    throw error;
  });
  const runIds = new Map<number, string>(fresh.map((item, i) => [item.index, results[i]!.id]));
  const itemsAccepted = fresh.length;
  // An item whose idempotency key answered it with an existing run (of another batch, or none)
  // joins this batch as a member at its index: the batch lists it, waits for it, and a re-sent
  // index is deduplicated. The run itself keeps its own batch.
  const members = fresh.flatMap((item, i) => (results[i]!.isCached ? [{ index: item.index, runId: results[i]!.id }] : []));
  if (members.length > 0) {
    await tx.query(
      `INSERT INTO batch_members (batch_id, batch_index, run_id) SELECT $1, * FROM unnest($2::int[], $3::text[]) ON CONFLICT DO NOTHING`,
      [batch.id, members.map((m) => m.index), members.map((m) => m.runId)],
    );
  }
  for (const index of runIds.keys()) present.add(index);
  const sealed = batch.sealed_at !== null || present.size >= batch.run_count;
  if (sealed && batch.sealed_at === null) await sealBatch(tx, batch.id, deps.clock.now());
  return {
    id: batch.id,
    itemsAccepted,
    runsCreated: fresh.length - members.length,
    itemsDeduplicated,
    sealed,
    enqueuedCount: batch.sealed_at !== null ? batch.run_count : present.size,
    expectedCount: batch.run_count,
    runIds,
  };
}

function labelled(error: unknown, where: string): unknown {
  if (error instanceof ValidationError) return new ValidationError(`${where}: ${error.message}`, { cause: error });
  if (error instanceof UnprocessableError) return new UnprocessableError(`${where}: ${error.message}`, { cause: error });
  return error;
}

/** Postgres text and jsonb cannot hold NUL: refuse it as bad input instead of failing in SQL. */
function containsNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(containsNul);
  if (value !== null && typeof value === "object") return Object.entries(value).some(([k, v]) => k.includes("\u0000") || containsNul(v));
  return false;
}
