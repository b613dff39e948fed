import type { Queryable } from "../../db/queryable.ts";
import { effectiveRetentionSql } from "./settings.ts";
import type { RetentionCounts } from "./sweep-environment.ts";

/**
 * The schedule of sweeps, one row per environment (retention_sweeps). Any number of workers run
 * the retention loop: a worker claims an environment whose sweep is due by moving its `due_at`
 * ahead in one guarded UPDATE (FOR UPDATE SKIP LOCKED), so each sweep has one worker, and workers
 * share the environments between them. A worker that dies mid-sweep leaves `due_at` at its claim:
 * another worker sweeps the environment once that time has come.
 */

/** Adds the rows of environments that have none yet (new environments), due at once. */
export async function addMissingSweeps(db: Queryable, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO retention_sweeps (environment_id, due_at)
     SELECT e.id, $1 FROM environments e WHERE NOT EXISTS (SELECT 1 FROM retention_sweeps s WHERE s.environment_id = e.id)
     ON CONFLICT (environment_id) DO NOTHING`,
    [now],
  );
}

/** A claimed sweep: the environment and how many days it keeps finished runs (0: forever). */
export interface ClaimedSweep {
  environmentId: string;
  days: number;
}

/**
 * Claims the environment whose sweep has been due longest, pushing its next sweep to
 * `holdUntil`; null when none is due. `defaultDays`: this worker's RUN_RETENTION_DAYS.
 */
export async function claimDueSweep(db: Queryable, now: Date, holdUntil: Date, defaultDays: number): Promise<ClaimedSweep | null> {
  const { rows } = await db.query<ClaimedSweep>(
    `WITH due AS (
       SELECT environment_id FROM retention_sweeps WHERE due_at <= $1 ORDER BY due_at LIMIT 1 FOR UPDATE SKIP LOCKED)
     UPDATE retention_sweeps s SET due_at = $2
     FROM due, environments e LEFT JOIN environments parent ON parent.id = e.parent_environment_id
     WHERE s.environment_id = due.environment_id AND e.id = due.environment_id
     RETURNING s.environment_id AS "environmentId", ${effectiveRetentionSql("$3::int")} AS days`,
    [now, holdUntil, defaultDays],
  );
  return rows[0] ?? null;
}

/** Keeps a long sweep's claim: its next sweep is not before `holdUntil`. */
export async function holdSweep(db: Queryable, environmentId: string, holdUntil: Date): Promise<void> {
  await db.query(`UPDATE retention_sweeps SET due_at = greatest(due_at, $2) WHERE environment_id = $1`, [environmentId, holdUntil]);
}

/** A sweep stopped before it was done (the worker is stopping): due again at `now`, for any worker. */
export async function releaseSweep(db: Queryable, environmentId: string, now: Date): Promise<void> {
  await db.query(`UPDATE retention_sweeps SET due_at = $2 WHERE environment_id = $1`, [environmentId, now]);
}

/** Records a complete sweep: when it ended and what it deleted. */
export async function recordSweep(db: Queryable, environmentId: string, sweptAt: Date, deleted: RetentionCounts): Promise<void> {
  await db.query(
    `UPDATE retention_sweeps SET swept_at = $2, last_deleted = $3, deleted_runs = deleted_runs + $4 WHERE environment_id = $1`,
    [environmentId, sweptAt, JSON.stringify(deleted), deleted.runs],
  );
}

/** When the next sweep is due: the earliest `due_at`, or the epoch when an environment has no row yet. */
export async function nextSweepDue(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT CASE WHEN EXISTS (SELECT 1 FROM environments e WHERE NOT EXISTS (SELECT 1 FROM retention_sweeps s WHERE s.environment_id = e.id))
                 THEN 'epoch'::timestamptz ELSE (SELECT min(due_at) FROM retention_sweeps) END AS at`,
  );
  return rows[0]?.at ?? null;
}
