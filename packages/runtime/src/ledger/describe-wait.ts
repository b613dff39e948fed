import type { Queryable } from "../db/queryable.ts";
import type { TaskWait } from "../sdk/run-context.ts";

/**
 * A wait as onWait/onResume hooks see it (Trigger.dev's TaskWait), read from its waitpoint: a
 * sleep's wake-up time, a child run's or batch's id. Only read when a task has such hooks.
 */
export async function describeWait(db: Queryable, environmentId: string, waitpointId: string): Promise<TaskWait | null> {
  const { rows } = await db.query<{ type: string; timeout_at: Date | null; completed_by_run_id: string | null; completed_by_batch_id: string | null; run_count: number | null }>(
    `SELECT w.type, w.timeout_at, w.completed_by_run_id, w.completed_by_batch_id,
            (SELECT b.run_count FROM batches b WHERE b.id = w.completed_by_batch_id AND b.environment_id = w.environment_id) AS run_count
     FROM waitpoints w WHERE w.id = $1 AND w.environment_id = $2`,
    [waitpointId, environmentId],
  );
  const w = rows[0];
  if (!w) return null;
  switch (w.type) {
    case "DATETIME":
      return w.timeout_at ? { type: "duration", date: w.timeout_at } : null;
    case "MANUAL":
      return { type: "token", token: waitpointId };
    case "RUN":
      return w.completed_by_run_id ? { type: "task", runId: w.completed_by_run_id } : null;
    case "BATCH":
      return w.completed_by_batch_id ? { type: "batch", batchId: w.completed_by_batch_id, runCount: w.run_count ?? 0 } : null;
    default:
      return null;
  }
}
