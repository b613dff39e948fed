import { registerQueues, type Queryable } from "@svc/runtime/engine";
import { rateLimitOf, type Task } from "@svc/runtime/sdk";

export function queueOf(task: Task): string {
  return task.queue?.name ?? `task/${task.id}`;
}

/**
 * Records the tasks this worker serves for its environment (what `worker_tasks` shows the API), and
 * the queues they run in (what the queues API lists and controls).
 */
export async function registerTasks(db: Queryable, environmentId: string, tasks: Task[], workerVersion: string, now: Date): Promise<void> {
  for (const task of tasks) {
    const rate = rateLimitOfTask(task);
    await db.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, retry, max_duration_s, kind, worker_version, registered_at, rate_limit, rate_period_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (environment_id, task_identifier) DO UPDATE SET queue_name = EXCLUDED.queue_name,
         concurrency_limit = EXCLUDED.concurrency_limit, retry = EXCLUDED.retry, max_duration_s = EXCLUDED.max_duration_s,
         kind = EXCLUDED.kind, worker_version = EXCLUDED.worker_version, registered_at = EXCLUDED.registered_at,
         rate_limit = EXCLUDED.rate_limit, rate_period_ms = EXCLUDED.rate_period_ms`,
      [environmentId, task.id, queueOf(task), task.queue?.concurrencyLimit ?? null, task.retry ? JSON.stringify(task.retry) : null, task.maxDuration ?? null, task.kind, workerVersion, now,
        rate?.limit ?? null, rate?.periodMs ?? null],
    );
  }
  await registerQueues(db, environmentId, [...new Set(tasks.map(queueOf))], now);
}

/** The rate limit a task declared for its queue (task({ rateLimit }), queue({ rateLimit })), in ms; null: none. */
export function rateLimitOfTask(task: Task): { limit: number; periodMs: number } | null {
  return task.queue?.rateLimit === undefined ? null : rateLimitOf(task.queue.rateLimit, `task("${task.id}")`);
}
