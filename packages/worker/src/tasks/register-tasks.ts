import { registerDeclaredLimits, registerQueues, type Pool } from "@svc/runtime/engine";
import { inlineLimitName, rateLimitOf, type Task } from "@svc/runtime/sdk";

export function queueOf(task: Task): string {
  return task.queue?.name ?? `task/${task.id}`;
}

/**
 * Records the tasks this worker serves for its environment (what `worker_tasks` shows the API), the
 * queues they run in (what the queues API lists and controls), and the concurrency limits they
 * declare (the limits their runs hold, and those limits' declared bounds: registerDeclaredLimits).
 */
export async function registerTasks(db: Pool, environmentId: string, tasks: Task[], workerVersion: string, now: Date): Promise<void> {
  for (const task of tasks) {
    const rate = rateLimitOfTask(task);
    const limits = declaredLimitsOf(task);
    await db.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, retry, max_duration_s, kind, worker_version, registered_at, rate_limit, rate_period_ms,
         concurrency_limits, concurrency_declared)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (environment_id, task_identifier) DO UPDATE SET queue_name = EXCLUDED.queue_name,
         concurrency_limit = EXCLUDED.concurrency_limit, retry = EXCLUDED.retry, max_duration_s = EXCLUDED.max_duration_s,
         kind = EXCLUDED.kind, worker_version = EXCLUDED.worker_version, registered_at = EXCLUDED.registered_at,
         rate_limit = EXCLUDED.rate_limit, rate_period_ms = EXCLUDED.rate_period_ms,
         concurrency_limits = EXCLUDED.concurrency_limits, concurrency_declared = EXCLUDED.concurrency_declared`,
      [environmentId, task.id, queueOf(task), task.queue?.concurrencyLimit ?? null, task.retry ? JSON.stringify(task.retry) : null, task.maxDuration ?? null, task.kind, workerVersion, now,
        rate?.limit ?? null, rate?.periodMs ?? null, limits?.held ?? null, limits ? JSON.stringify(limits.declared) : null],
    );
  }
  await registerQueues(db, environmentId, [...new Set(tasks.map(queueOf))], now);
  await registerDeclaredLimits(db, environmentId, now);
}

/** The rate limit a task declared for its queue (task({ rateLimit }), queue({ rateLimit })), in ms; null: none. */
export function rateLimitOfTask(task: Task): { limit: number; periodMs: number } | null {
  return task.queue?.rateLimit === undefined ? null : rateLimitOf(task.queue.rateLimit, `task("${task.id}")`);
}

/**
 * The concurrency limits a task's runs hold (its named ones, then its inline one as `task/<id>`),
 * and the bounds it declares for them (a limit named only by its name, with no declaration of it
 * among the worker's exports, declares none); null: the task declares no `concurrency`.
 */
export function declaredLimitsOf(task: Task): { held: string[]; declared: { name: string; per_key: number | null; total: number | null }[] } | null {
  const c = task.concurrency;
  if (!c) return null;
  const declared = c.limits.filter((l) => l.bounds).map((l) => ({ name: l.name, per_key: l.bounds!.perKey ?? null, total: l.bounds!.total ?? null }));
  const held = c.limits.map((l) => l.name);
  if (c.inline) {
    held.push(inlineLimitName(task.id));
    declared.push({ name: inlineLimitName(task.id), per_key: c.inline.perKey ?? null, total: c.inline.total ?? null });
  }
  return held.length === 0 ? null : { held, declared };
}

/** The queues of `tasks` whose runs hold named concurrency limits by declaration: claimed by the queue's own claim, under the named limits' lock. */
export function namedLimitQueues(tasks: Task[]): string[] {
  return [...new Set(tasks.filter((t) => declaredLimitsOf(t) !== null).map(queueOf))];
}
