import type { Queryable } from "@svc/runtime/db";
import { CHANNELS } from "@svc/runtime/engine";

export interface WorkerRecord {
  id: string;
  environmentId: string;
  tasks: string[];
  version: string;
}

/** The NOTIFY channel a worker hears its resume offers on (svc_complete_waitpoint sends them). */
export function offersChannel(workerId: string): string {
  return CHANNELS.offersPrefix + workerId;
}

/** Rows of workers gone this long without a word are removed by the others' heartbeats. */
const FORGOTTEN_AFTER = "1 hour";

/**
 * Writes (or rewrites, after the LISTEN connection was replaced) this worker's row in the registry
 * that completions pick resume offers from: live until `aliveUntil`, and while its LISTEN
 * connection holds the advisory lock `listenerLock`.
 */
export async function registerWorker(db: Queryable, worker: WorkerRecord, listenerLock: string, aliveUntil: Date): Promise<void> {
  await db.query(
    `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until)
     VALUES ($1, $2, $3, $4, $5::bigint, $6)
     ON CONFLICT (id) DO UPDATE SET listener_lock = EXCLUDED.listener_lock, alive_until = EXCLUDED.alive_until`,
    [worker.id, worker.environmentId, worker.tasks, worker.version, listenerLock, aliveUntil],
  );
}

/**
 * Keeps this worker's row live; also removes rows of workers long gone. Returns false when the row
 * is missing (removed while this worker was unreachable): the caller registers again.
 */
export async function renewWorker(db: Queryable, workerId: string, aliveUntil: Date): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE workers SET alive_until = $2 WHERE id = $1`, [workerId, aliveUntil]);
  await db.query(`DELETE FROM workers WHERE alive_until < $1::timestamptz - $2::interval`, [aliveUntil, FORGOTTEN_AFTER]);
  return (rowCount ?? 0) > 0;
}

/** Takes this worker out of the registry: no more offers come to it (drain). */
export async function unregisterWorker(db: Queryable, workerId: string): Promise<void> {
  await db.query(`DELETE FROM workers WHERE id = $1`, [workerId]);
}
