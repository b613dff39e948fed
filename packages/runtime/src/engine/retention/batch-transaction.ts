import { withTransaction, type Pool, type PoolClient } from "../../db/queryable.ts";

/**
 * The transaction of one batch of a retention sweep:
 *
 * - its commit does not wait for the WAL flush: a batch lost in a crash is deleted again by the next sweep;
 * - it gives up after 5 s behind a lock rather than queue for long (the sweep fails, is reported,
 *   and runs again when next due).
 * (No JIT, as on every svc connection: db/queryable.ts, DEFAULT_SETTINGS.)
 */
export function inBatchTransaction<T>(db: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(
    db,
    async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '5s'`);
      return fn(tx);
    },
    { asyncCommit: true },
  );
}
