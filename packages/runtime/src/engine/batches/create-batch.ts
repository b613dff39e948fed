import { withTransaction } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { CreateBatchBody } from "../../contracts/batches.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { findBatchByIdempotencyKey, insertBatch, type BatchRow } from "./store.ts";

export interface CreateBatchResult {
  batch: BatchRow;
  /** True when the idempotency key matched an existing batch of the environment. */
  isCached: boolean;
}

/**
 * Phase 1 of a streamed batch: reserves a batch of `runCount` runs (items arrive later through
 * `addBatchItems`). A batch idempotency key already used in the environment returns that batch.
 */
export async function createBatch(
  deps: Pick<EngineDeps, "db" | "clock">,
  env: Environment,
  input: CreateBatchBody,
  options: { oneTimeUseToken?: string } = {},
): Promise<CreateBatchResult> {
  return withTransaction(deps.db, async (tx) => {
    const key = input.idempotencyKey ?? null;
    if (key) {
      const existing = await findBatchByIdempotencyKey(tx, env.id, key);
      if (existing) return { batch: existing, isCached: true };
    }
    if (input.parentRunId) {
      const { rowCount } = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND environment_id = $2`, [input.parentRunId, env.id]);
      if (!rowCount) throw new UnprocessableError(`parentRunId: run ${input.parentRunId} not found`);
    }
    const batch = await insertBatch(tx, {
      id: newId.batch(),
      environmentId: env.id,
      runCount: input.runCount,
      idempotencyKey: key,
      idempotencyKeyUser: key ? (input.idempotencyKeyOptions?.key ?? key) : null,
      parentRunId: input.parentRunId ?? null,
      resumeParentOnCompletion: input.resumeParentOnCompletion ?? false,
      createdAt: deps.clock.now(),
      oneTimeUseToken: options.oneTimeUseToken ?? null,
    });
    if (batch) return { batch, isCached: false };
    // A concurrent create with the same key committed first.
    const winner = await findBatchByIdempotencyKey(tx, env.id, key!);
    if (!winner) throw new Error("batch idempotency conflict without a holder");
    return { batch: winner, isCached: true };
  });
}
