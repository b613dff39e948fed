import type { Queryable } from "../../db/queryable.ts";

/** A worker of the registry (table `workers`) as the dashboard shows it. */
export interface LiveWorker {
  id: string;
  tasks: string[];
  version: string;
  /** How many runs it may execute at once; null for a worker started before it said so (migration 0024). */
  slots: number | null;
  /** Slots taken at its last heartbeat. */
  slotsInUse: number;
  /** Null for a worker started before migration 0024. */
  startedAt: Date | null;
  /** Its last registration or renewal, by its own clock; null as for `startedAt`. */
  lastHeartbeatAt: Date | null;
  /** Counted as live until then unless it renews (it renews every leaseMs / 3). */
  aliveUntil: Date;
}

interface WorkerRow {
  id: string;
  tasks: string[];
  version: string;
  slots: number | null;
  slots_in_use: number;
  started_at: Date | null;
  heartbeat_at: Date | null;
  alive_until: Date;
}

/**
 * The workers of an environment whose registry row is live at `now`, oldest first. A worker that
 * drained has deleted its row; one that died keeps it until `alive_until` passes, so it is listed
 * for at most one lease after it died. (Completions also ask whether the worker's LISTEN connection
 * still holds its lock: that takes a lock, which a read for a page should not, so a worker killed
 * with -9 is shown here until its lease runs out.)
 */
export async function listLiveWorkers(db: Queryable, environmentId: string, now: Date): Promise<LiveWorker[]> {
  const { rows } = await db.query<WorkerRow>(
    `SELECT id, tasks, version, slots, slots_in_use, started_at, heartbeat_at, alive_until
       FROM workers WHERE environment_id = $1 AND alive_until > $2
      ORDER BY started_at NULLS FIRST, id`,
    [environmentId, now],
  );
  return rows.map((r) => ({
    id: r.id,
    tasks: r.tasks,
    version: r.version,
    slots: r.slots,
    slotsInUse: r.slots_in_use,
    startedAt: r.started_at,
    lastHeartbeatAt: r.heartbeat_at,
    aliveUntil: r.alive_until,
  }));
}
