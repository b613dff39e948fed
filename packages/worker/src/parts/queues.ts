import type { Task } from "@svc/runtime/sdk";
import { queueOf, rateLimitOfTask } from "../tasks/register-tasks.ts";

/**
 * The queues of `tasks` with their concurrency limits (null: none): each task's own
 * (`task/<id>`), and the queues tasks name. Tasks naming one queue share it: its limit is the
 * strictest any of them declares (as svc_queue_is_limited treats a queue as limited when any of
 * its tasks has a limit). Taking the last task's setting let a task declared without a limit lift
 * it for the whole queue. The worker's registry entry names them all (workers.queues: runs made
 * ready in them wake it), and it claims the runs of each limited one with that queue's claim.
 */
export function startQueues(tasks: Task[]): Map<string, number | null> {
  const queues = new Map<string, number | null>();
  for (const task of tasks) {
    const limit = task.queue?.concurrencyLimit ?? null;
    const declared = queues.get(queueOf(task)) ?? null;
    queues.set(queueOf(task), declared === null ? limit : limit === null ? declared : Math.min(declared, limit));
    if (!queues.has(`task/${task.id}`)) queues.set(`task/${task.id}`, null);
  }
  return queues;
}

/**
 * The queues of `tasks` that have a concurrencyLimit or a rateLimit: each is claimed by its own
 * claim (CLAIM_LIMITED_SQL), which counts them.
 */
export function limitedQueues(tasks: Task[]): string[] {
  const rated = rateLimitedQueues(tasks);
  return [...startQueues(tasks)].filter(([name, limit]) => limit !== null || rated.has(name)).map(([name]) => name);
}

/** The queues of `tasks` that have a rateLimit: their claims also tell when the next run's slot is due. */
export function rateLimitedQueues(tasks: Task[]): Set<string> {
  return new Set(tasks.filter((task) => rateLimitOfTask(task) !== null).map(queueOf));
}
