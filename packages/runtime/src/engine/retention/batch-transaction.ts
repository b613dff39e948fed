import { withTransaction, type Pool, type PoolClient } from "../../db/queryable.ts";

/**
 * The transaction of one batch of a retention sweep:
 *
 * - its commit does not wait for the WAL flush: a batch lost in a crash is deleted again by the next sweep;
 * - it gives up after 5 s behind a lock rather than queue for long (the sweep fails, is reported,
 *   and runs again when next due);
 * - no JIT: the sweep's statements are planned over tables whose statistics may lag far behind
 *   (a first sweep over a freshly loaded history), where their estimated cost passes
 *   jit_above_cost and compiling them took ~1 s per batch of 1,000 runs that runs in ~30 ms.
 */
export function inBatchTransaction<T>(db: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(
    db,
    async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '5s'; SET LOCAL jit = off`);
      return fn(tx);
    },
    { asyncCommit: true },
  );
}
