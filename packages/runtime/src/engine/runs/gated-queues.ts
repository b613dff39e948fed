import type { Queryable } from "../../db/queryable.ts";

/**
 * Of the queues `names` of an environment, those that live runs of any queue name in a gate (the
 * pools others count on): when one of their runs ends, the gated runs waiting for its slot are
 * woken (wakeGateWaiters). One read of index runs_gated_live's environment.
 */
export async function queuesGatedOn(db: Queryable, environmentId: string, names: string[]): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT DISTINCT g.queue AS name FROM runs r CROSS JOIN LATERAL jsonb_to_recordset(r.gates) AS g(queue text)
     WHERE r.environment_id = $1 AND r.gates IS NOT NULL AND r.list_status = 'LIVE' AND g.queue = ANY ($2::text[])`,
    [environmentId, names],
  );
  return rows.map((r) => r.name);
}
