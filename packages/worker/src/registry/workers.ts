import type { Queryable } from "@svc/runtime/db";
import { CHANNELS, prepared } from "@svc/runtime/engine";

export interface WorkerRecord {
  id: string;
  environmentId: string;
  tasks: string[];
  version: string;
  /** How many runs it may execute at once (its concurrency). */
  slots: number;
  /** The queues whose ready runs it claims: runs made ready in these wake it (engine/runs/wake-workers.ts). */
  queues: string[];
  /** When it first entered the registry (kept when it enters again after a reconnect). */
  startedAt: Date;
  /** How long a lease of its executions lasts: an offer claims a run for it with this lease. */
  leaseMs: number;
}

/** What each registry write says of the worker now, by its own clock. */
export interface Heartbeat {
  at: Date;
  /** Live (offered resumes) until then, unless renewed. */
  aliveUntil: Date;
  /** Slots taken by executions at `at`. */
  slotsInUse: number;
}

/** Whether the worker has no free slot (since when, by its clock), as registration records it. */
export interface Fullness {
  fullSince: Date | null;
}

/** The NOTIFY channel a worker hears its resume offers on (svc_complete_waitpoint sends them). */
export function offersChannel(workerId: string): string {
  return CHANNELS.offersPrefix + workerId;
}

/** Rows of workers gone this long without a word are removed by the others' heartbeats. */
const FORGOTTEN_AFTER = "1 hour";

/**
 * Writes (or rewrites, after the LISTEN connection was replaced) this worker's row in the registry
 * that completions pick resume offers from: live until `heartbeat.aliveUntil`, and while its LISTEN
 * connection holds the advisory lock `listenerLock`.
 */
export async function registerWorker(db: Queryable, worker: WorkerRecord, listenerLock: string, heartbeat: Heartbeat & Fullness): Promise<void> {
  await db.query(
    `INSERT INTO workers (id, environment_id, tasks, version, listener_lock, alive_until, slots, slots_in_use, started_at, heartbeat_at, full_since, queues, lease_ms)
     VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (id) DO UPDATE SET listener_lock = EXCLUDED.listener_lock, alive_until = EXCLUDED.alive_until,
       slots_in_use = EXCLUDED.slots_in_use, heartbeat_at = EXCLUDED.heartbeat_at, full_since = EXCLUDED.full_since`,
    [worker.id, worker.environmentId, worker.tasks, worker.version, listenerLock, heartbeat.aliveUntil, worker.slots, heartbeat.slotsInUse, worker.startedAt, heartbeat.at, heartbeat.fullSince, worker.queues, worker.leaseMs],
  );
}

/**
 * Records that the worker's last free slot was taken at `at` (completions then offer its resumes
 * to workers with a free slot, when there is one). Guarded: false when the row already said so (or
 * is missing).
 */
export async function markWorkerFull(db: Queryable, workerId: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(prepared("svc_worker_full", `UPDATE workers SET full_since = $2 WHERE id = $1 AND full_since IS NULL`, [workerId, at]));
  return (rowCount ?? 0) > 0;
}

/** Records that the worker has a free slot again. Guarded: false when the row already said so (or is missing). */
export async function markWorkerFree(db: Queryable, workerId: string): Promise<boolean> {
  const { rowCount } = await db.query(prepared("svc_worker_free", `UPDATE workers SET full_since = NULL WHERE id = $1 AND full_since IS NOT NULL`, [workerId]));
  return (rowCount ?? 0) > 0;
}

/**
 * Keeps this worker's row live and says how busy it is; also removes rows of workers long gone.
 * Returns false when the row is missing (removed while this worker was unreachable): the caller
 * registers again.
 */
export async function renewWorker(db: Queryable, workerId: string, heartbeat: Heartbeat): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE workers SET alive_until = $2, slots_in_use = $3, heartbeat_at = $4 WHERE id = $1`, [
    workerId,
    heartbeat.aliveUntil,
    heartbeat.slotsInUse,
    heartbeat.at,
  ]);
  await db.query(`DELETE FROM workers WHERE alive_until < $1::timestamptz - $2::interval`, [heartbeat.aliveUntil, FORGOTTEN_AFTER]);
  return (rowCount ?? 0) > 0;
}

/** Takes this worker out of the registry: no more offers come to it (drain). */
export async function unregisterWorker(db: Queryable, workerId: string): Promise<void> {
  await db.query(`DELETE FROM workers WHERE id = $1`, [workerId]);
}
