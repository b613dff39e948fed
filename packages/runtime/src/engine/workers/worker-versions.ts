import type { Queryable } from "../../db/queryable.ts";

/**
 * `worker_versions` (migration 0033): for each environment and worker version, a time no claim
 * that gave runs this version came after. The run list's version filter starts its walk there.
 *
 * A claim statement makes sure of it with versionSeenTouch: when `seen_until` is less than half a
 * minute ahead of the claim's time, it moves to a minute ahead. So the row is written at most about
 * twice a minute per version, and a claim never waits for it otherwise. The completion that offers
 * runs to a worker (sql/functions/svc_complete_waitpoint.sql) makes the same update for the
 * versions it gives them: change both together.
 */

/** How far the list reads past `seen_until`: runs get created_at from the API's clock, claims use the worker's. */
export const VERSION_CLOCK_MARGIN = "5 minutes";

/**
 * A CTE (with its leading comma) for a claim statement: keeps `seen_until` of version `version`
 * (an SQL expression) past `now` in the environments of the runs of CTE `claimed`. Only rows due
 * are written (and locked). The row is there: the worker entered it before its first claim.
 */
export function versionSeenTouch(version: string, now: string): string {
  return `, version_seen AS (
       UPDATE worker_versions v SET seen_until = ${now}::timestamptz + interval '1 minute'
       WHERE v.version = ${version} AND v.environment_id IN (SELECT DISTINCT environment_id FROM claimed)
         AND v.seen_until < ${now}::timestamptz + interval '30 seconds')`;
}

/**
 * Enters a worker's version before it registers its tasks and claims anything: from then on its
 * claims keep the row current. A row already there (another worker of the version, a restart, or
 * `infinity` for a version an older build ran) is left as it is.
 */
export async function enterWorkerVersion(db: Queryable, environmentId: string, version: string, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO worker_versions (environment_id, version, seen_until) VALUES ($1, $2, $3::timestamptz + interval '1 minute')
     ON CONFLICT (environment_id, version) DO NOTHING`,
    [environmentId, version, now],
  );
}
