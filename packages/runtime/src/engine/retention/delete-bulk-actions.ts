import type { Queryable } from "../../db/queryable.ts";

/**
 * Deletes up to `limit` of the environment's bulk actions that ended (completed or aborted) before
 * the cutoff, oldest first (bulk_actions_list: an action ends after it was created, so those
 * created before the cutoff are the only candidates). A pending action is never deleted, however
 * old: its processing still reads it.
 */
export async function deleteBulkActionBatch(db: Queryable, environmentId: string, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM bulk_actions b WHERE b.id IN (
       SELECT id FROM bulk_actions
       WHERE environment_id = $1 AND created_at < $2 AND status <> 'PENDING' AND completed_at < $2
       ORDER BY created_at, id LIMIT $3)
     AND b.environment_id = $1 AND b.status <> 'PENDING'`,
    [environmentId, cutoff, limit],
  );
  return rowCount ?? 0;
}
