import { withTransaction } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { BatchTriggerV2Body } from "../../contracts/batches.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { addBatchItemsInTransaction } from "./batch-items.ts";
import { insertBatch } from "./store.ts";

export interface TriggerBatchResult {
  id: string;
  runCount: number;
  /** Run ids in item order. */
  runs: string[];
  /** How many of them this call created (an item an idempotency key answered with an existing run created none). */
  runsCreated: number;
}

/** POST /api/v2/tasks/batch: a whole batch in one call and one transaction (all runs or none). */
export async function triggerBatch(
  deps: Pick<EngineDeps, "db" | "clock" | "dispatcher">,
  env: Environment,
  input: BatchTriggerV2Body,
  options: { oneTimeUseToken?: string; traceparent?: string } = {},
): Promise<TriggerBatchResult> {
  return withTransaction(deps.db, async (tx) => {
    if (input.parentRunId) {
      const { rowCount } = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND environment_id = $2`, [input.parentRunId, env.id]);
      if (!rowCount) throw new UnprocessableError(`parentRunId: run ${input.parentRunId} not found`);
    }
    const batch = await insertBatch(tx, {
      id: newId.batch(),
      environmentId: env.id,
      runCount: input.items.length,
      parentRunId: input.parentRunId ?? null,
      resumeParentOnCompletion: input.resumeParentOnCompletion ?? false,
      createdAt: deps.clock.now(),
      oneTimeUseToken: options.oneTimeUseToken ?? null,
    });
    const items = input.items.map((item, index) => ({ index, task: item.task, payload: item.payload, options: item.options }));
    const result = await addBatchItemsInTransaction(deps, tx, env, batch!, items, options.traceparent ? { traceparent: options.traceparent } : {});
    return { id: batch!.id, runCount: input.items.length, runs: items.map((item) => result.runIds.get(item.index)!), runsCreated: result.runsCreated };
  });
}
