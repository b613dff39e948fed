import { resumeQueueName, startQueueName, type QueueSubscription } from "@svc/queue";
import type { Task } from "@svc/runtime/sdk";
import { queueOf } from "../tasks/register-tasks.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * The start queues of `tasks` with their concurrency limits (null: none): each task's own
 * (`task/<id>`), and the queues tasks name. Tasks naming one queue share it: its limit is the
 * strictest any of them declares (as svc_complete_waitpoint treats a queue as limited when any of
 * its tasks has a limit). Taking the last task's setting let a task declared without a limit lift
 * it for the whole queue.
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
 * The pg-boss queues a worker with `tasks` takes jobs from in `environmentId`: its start queues
 * (startQueues) and the environment's resume queue. Its registry entry names them
 * (workers.queues), so that a new job wakes a worker that fetches it.
 */
export function consumedQueues(environmentId: string, tasks: Task[]): QueueSubscription[] {
  return [
    ...[...startQueues(tasks)].map(([name, limit]) => ({ name: startQueueName(environmentId, name), concurrencyLimit: limit })),
    { name: resumeQueueName(environmentId) },
  ];
}

/** Makes sure the pg-boss queues of this worker's tasks and environment exist, and takes jobs from them. */
export async function subscribeQueues({ worker, tasks, queue }: WorkerResources, slots: Slots): Promise<void> {
  for (const subscription of consumedQueues(worker.environment.id, tasks)) {
    await queue.dispatcher.ensureQueue(subscription.name);
    slots.subscribe(subscription);
  }
}
