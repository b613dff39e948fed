import { withTransaction, type Pool } from "@svc/runtime/engine";
import type { QueueDb } from "@svc/queue";

/**
 * Runs a fetch from a queue with a concurrencyLimit while holding that queue's lock: one fetch at
 * a time per limited queue, across all workers (the consumer's serializeFetch). The lock ends with
 * the transaction.
 */
export function fetchUnderQueueLock<T>(db: Pool, queue: string, fetch: (db: QueueDb) => Promise<T>): Promise<T> {
  return withTransaction(db, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`svc-queue-fetch:${queue}`]);
    return fetch({ executeSql: (text, values) => tx.query(text, values) });
  });
}
