import { withTransaction, type Pool } from "../../db/queryable.ts";
import { notifyQueuesChanged } from "../queues/queue-controls.ts";

/**
 * The lock that registrations of one environment's declared limits take in turn, so that the last
 * to commit computed the bounds from every task registered before it (two computing at once from
 * two snapshots could leave the older one's answer in place).
 */
const DECLARED_LIMITS_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended('declared-concurrency-limits' || E'\\u0001' || $1, 0))`;

/**
 * Sets the declared bounds (`per_key`, `total`: the base that an override replaces and a reset
 * returns to) of the environment's named concurrency limits from the tasks registered now
 * (worker_tasks.concurrency_declared, migration 0050): for each bound, the strictest any task
 * declares for the limit (tasks of two worker versions declaring it differently: the lower holds
 * until the other one's tasks register again). A limit no registered task declares any more keeps
 * its row (an operator's overrides, pause and key caps stay) with no declared bound. Creates the
 * rows of limits declared for the first time. When a bound changed, the environment's workers hear
 * of it (CHANNELS.queuesChanged) and claim: a raised limit starts its waiting runs at once. Returns
 * the names of the limits whose bounds changed.
 */
export async function registerDeclaredLimits(db: Pool, environmentId: string, now: Date): Promise<string[]> {
  const changed = await withTransaction(db, async (tx) => {
    await tx.query(DECLARED_LIMITS_LOCK_SQL, [environmentId]);
    const { rows } = await tx.query<{ name: string }>(
      `WITH declared AS (
         SELECT d.name, min(d.per_key) AS per_key, min(d.total) AS total
         FROM worker_tasks wt CROSS JOIN LATERAL jsonb_to_recordset(wt.concurrency_declared) AS d(name text, per_key int, total int)
         WHERE wt.environment_id = $1 AND wt.concurrency_declared IS NOT NULL
         GROUP BY d.name),
       upserted AS (
         INSERT INTO concurrency_limits AS cl (environment_id, name, per_key, total, created_at, updated_at)
         SELECT $1, d.name, d.per_key, d.total, $2, $2 FROM declared d
         ON CONFLICT (environment_id, name) DO UPDATE SET per_key = EXCLUDED.per_key, total = EXCLUDED.total, updated_at = $2
         WHERE cl.per_key IS DISTINCT FROM EXCLUDED.per_key OR cl.total IS DISTINCT FROM EXCLUDED.total
         RETURNING cl.name),
       undeclared AS (
         UPDATE concurrency_limits cl SET per_key = NULL, total = NULL, updated_at = $2
         WHERE cl.environment_id = $1 AND (cl.per_key IS NOT NULL OR cl.total IS NOT NULL) AND cl.name NOT IN (SELECT name FROM declared)
         RETURNING cl.name)
       SELECT name FROM upserted UNION ALL SELECT name FROM undeclared`,
      [environmentId, now],
    );
    return rows.map((r) => r.name);
  });
  if (changed.length > 0) await notifyQueuesChanged(db, environmentId);
  return changed;
}
