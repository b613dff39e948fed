import type { Queryable } from "../../db/queryable.ts";

/**
 * Tasks with runs that nothing will run: QUEUED runs (ready, or waiting out a delay or backoff)
 * of a task that no live worker of their environment serves. `registered`: whether any worker of
 * the environment ever registered it (false: a typo in the task id, or code never deployed there).
 * Trigger.dev v4 accepts such a trigger too (the run waits, PENDING_VERSION, until a version with
 * the task is deployed); svc keeps the run QUEUED (the API presents one of a never-registered task
 * as PENDING_VERSION: runs/pending-version.ts) and says so here, on the dashboard, in `svc dev` and
 * in the `svc_runs_unserved` metric.
 */
export interface UnservedTask {
  task: string;
  queued: number;
  /** When the oldest of those runs was triggered. */
  oldestCreatedAt: Date;
  registered: boolean;
}

interface Row {
  task: string;
  queued: number;
  oldest_created_at: Date;
  registered: boolean;
}

/**
 * The environment's unserved tasks, by task. Reads its QUEUED runs (no index on status: like the
 * queues page's figures, a scan of the environment's share of `runs`), so call it for a page.
 */
export async function unservedTasks(db: Queryable, environmentId: string, now: Date): Promise<UnservedTask[]> {
  const { rows } = await db.query<Row>(
    `WITH served AS (SELECT DISTINCT unnest(tasks) AS task FROM workers WHERE environment_id = $1 AND alive_until > $2)
     SELECT r.task_identifier AS task, count(*)::int AS queued, min(r.created_at) AS oldest_created_at,
            EXISTS (SELECT 1 FROM worker_tasks wt WHERE wt.environment_id = $1 AND wt.task_identifier = r.task_identifier) AS registered
       FROM runs r
      WHERE r.environment_id = $1 AND r.status = 'QUEUED' AND NOT EXISTS (SELECT 1 FROM served WHERE served.task = r.task_identifier)
      GROUP BY r.task_identifier ORDER BY r.task_identifier`,
    [environmentId, now],
  );
  return rows.map((r) => ({ task: r.task, queued: r.queued, oldestCreatedAt: r.oldest_created_at, registered: r.registered }));
}

/** Database-wide, per task: QUEUED runs no live worker of their environment serves (the metric). */
export async function unservedRunCounts(db: Queryable, now: Date): Promise<{ task: string; queued: number }[]> {
  const { rows } = await db.query<{ task: string; queued: number }>(
    `SELECT r.task_identifier AS task, count(*)::int AS queued
       FROM runs r
      WHERE r.status = 'QUEUED'
        AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.environment_id = r.environment_id AND w.alive_until > $1 AND r.task_identifier = ANY (w.tasks))
      GROUP BY r.task_identifier`,
    [now],
  );
  return rows;
}

/** The oldest QUEUED run of a task in the environment (runs_task_list), or null: what `svc dev` names. */
export async function oldestQueuedRun(db: Queryable, environmentId: string, task: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM runs WHERE environment_id = $1 AND task_identifier = $2 AND status = 'QUEUED' ORDER BY created_at, id LIMIT 1`,
    [environmentId, task],
  );
  return rows[0]?.id ?? null;
}
