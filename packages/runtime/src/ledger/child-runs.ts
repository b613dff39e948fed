import type { Queryable } from "../db/queryable.ts";
import { newId } from "../ids.ts";
import type { EngineDeps } from "../engine/deps.ts";
import { attachWaiter, childOutcome, completeBatchIfDone } from "../engine/runs/notify-waiters.ts";
import { triggerRunInTransaction } from "../engine/runs/trigger.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { completeWaitpoint } from "../engine/waitpoints/complete-waitpoint.ts";
import { insertWaitpoint } from "../engine/waitpoints/store.ts";
import type { MadeWaitpoint } from "./ledger-store.ts";

/** The run that triggers children and waits for them, as its children's lineage records it. */
export interface ParentRun {
  env: Environment;
  runId: string;
  /** Traces on: the attempt span's traceparent, the children's parent span. */
  trace: { traceparent?: string };
}

const PAYLOAD_TYPE = "application/super+json";

/**
 * Triggers a child run and makes the RUN waitpoint its ending completes, in `tx` (the transaction
 * that records the parent's wait on it). Returns the waitpoint's id, and 1 run triggered unless an
 * idempotency key found an existing run.
 */
export async function makeChildRunWaitpoint(deps: EngineDeps, tx: Queryable, parent: ParentRun, taskId: string, payload: unknown, options: Record<string, unknown>): Promise<MadeWaitpoint> {
  const now = deps.clock.now();
  const child = await triggerRunInTransaction(deps, tx, parent.env, taskId, payload, { ...options, payloadType: PAYLOAD_TYPE }, {
    parentRunId: parent.runId,
    triggerFunction: "triggerAndWait",
    ...parent.trace,
  });
  const waitpoint = await insertWaitpoint(tx, { id: newId.waitpoint(), environmentId: parent.env.id, type: "RUN", completedByRunId: child.id, createdAt: now });
  // An idempotency key can hand back a run another trigger made: mark it awaited, so its ending
  // wakes us, or — when it has already ended — complete the waitpoint with its outcome now (the
  // wait then resolves inline).
  if (child.isCached) {
    const ended = await attachWaiter(tx, child.id);
    if (ended) await completeWaitpoint(deps, tx, waitpoint.id, childOutcome(ended), { status: "COMPLETED" });
  }
  return { id: waitpoint.id, runsTriggered: child.isCached ? 0 : 1 };
}

/**
 * Triggers a batch of child runs and makes the BATCH waitpoint its completion completes, in `tx`.
 * Returns the waitpoint's id and how many runs it created (items an idempotency key answered with
 * an existing run create none).
 */
export async function makeChildBatchWaitpoint(
  deps: EngineDeps,
  tx: Queryable,
  parent: ParentRun,
  taskId: string,
  items: { payload: unknown; options?: Record<string, unknown> }[],
): Promise<MadeWaitpoint> {
  const now = deps.clock.now();
  const batchId = newId.batch();
  await tx.query(`INSERT INTO batches (id, environment_id, run_count, parent_run_id, resume_parent_on_completion, sealed_at, created_at) VALUES ($1, $2, $3, $4, true, $5, $5)`, [
    batchId,
    parent.env.id,
    items.length,
    parent.runId,
    now,
  ]);
  let answeredByKey = 0;
  for (const [index, item] of items.entries()) {
    const child = await triggerRunInTransaction(deps, tx, parent.env, taskId, item.payload, { ...item.options, payloadType: PAYLOAD_TYPE }, {
      parentRunId: parent.runId,
      triggerFunction: "batchTriggerAndWait",
      batchId,
      batchIndex: index,
      ...parent.trace,
    });
    if (child.isCached) {
      // An idempotency key answered this item with an existing run: it joins the batch as a
      // member, and its ending must count (attachWaiter), unless it has ended already.
      answeredByKey++;
      await tx.query(`INSERT INTO batch_members (batch_id, batch_index, run_id) VALUES ($1, $2, $3)`, [batchId, index, child.id]);
      await attachWaiter(tx, child.id);
    }
  }
  const waitpoint = await insertWaitpoint(tx, { id: newId.waitpoint(), environmentId: parent.env.id, type: "BATCH", completedByBatchId: batchId, createdAt: now });
  // Every item may have been answered by runs that have already ended: nothing else would complete the batch.
  if (answeredByKey > 0) await completeBatchIfDone(deps, tx, batchId);
  return { id: waitpoint.id, runsTriggered: items.length - answeredByKey };
}
