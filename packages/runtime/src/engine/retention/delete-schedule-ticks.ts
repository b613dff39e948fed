import type { Queryable } from "../../db/queryable.ts";

/**
 * Deletes up to `limit` ticks fired before the cutoff by the environment's schedules (the primary
 * key, per schedule). A tick row only stops a tick from firing twice; ticks that old are long past
 * the schedule's next_run_at. Their runs are deleted by the runs sweep.
 */
export async function deleteScheduleTickBatch(db: Queryable, environmentId: string, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM schedule_ticks t USING (
       SELECT old.schedule_id, old.tick_at FROM schedules s
       CROSS JOIN LATERAL (
         SELECT schedule_id, tick_at FROM schedule_ticks WHERE schedule_id = s.id AND tick_at < $2 ORDER BY tick_at LIMIT $3) old
       WHERE s.environment_id = $1 LIMIT $3) d
     WHERE t.schedule_id = d.schedule_id AND t.tick_at = d.tick_at`,
    [environmentId, cutoff, limit],
  );
  return rowCount ?? 0;
}
