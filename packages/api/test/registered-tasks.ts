import type { Queryable } from "@svc/runtime/engine";

/**
 * Registers tasks in the environment as a starting worker does (worker_tasks), without a live
 * worker: their runs stay queued and read QUEUED. A task no worker ever registered reads
 * PENDING_VERSION instead (Trigger.dev's status for it; engine/runs/pending-version.ts).
 */
export async function registerTasks(db: Queryable, environmentId: string, tasks: string[]): Promise<void> {
  await db.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version)
     SELECT $1, t, 'task/' || t, 'test' FROM unnest($2::text[]) AS t ON CONFLICT DO NOTHING`,
    [environmentId, tasks],
  );
}
