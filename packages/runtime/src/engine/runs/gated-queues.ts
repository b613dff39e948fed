import type { Queryable } from "../../db/queryable.ts";

/**
 * Of the queues `names` of an environment, those with live runs that have gates (index
 * runs_gated_live, migration 0049): a worker claims them with their queue's limited claim, holding
 * the gate queues' locks too (GATE_QUEUE_LOCKS_SQL; workers' ready-runs.ts).
 */
export async function queuesWithGatedRuns(db: Queryable, environmentId: string, names: string[]): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT q.name FROM unnest($2::text[]) AS q(name)
     WHERE EXISTS (SELECT 1 FROM runs r WHERE r.environment_id = $1 AND r.queue_name = q.name AND r.gates IS NOT NULL AND r.list_status = 'LIVE')`,
    [environmentId, names],
  );
  return rows.map((r) => r.name);
}
