import { createHash } from "node:crypto";

/** pg-boss allows [\w.\-/] in queue names; anything else is replaced and disambiguated by a hash. */
function safe(name: string): string {
  const cleaned = name.replace(/[^\w.\-/]/g, "_");
  if (cleaned === name) return name;
  return `${cleaned}~${createHash("sha256").update(name).digest("hex").slice(0, 8)}`.replace("~", "_h");
}

/** The pg-boss queue that carries start jobs for one svc queue of one environment. */
export function startQueueName(environmentId: string, queueName: string): string {
  return `svc.${environmentId}.${safe(queueName)}`;
}

/** Whether a pg-boss queue is one that carries start jobs (startQueueName's). */
export function isStartQueueName(name: string): boolean {
  return name.startsWith("svc.");
}

/** The pg-boss queue that carries resume jobs of one environment (the resumes the NOTIFY fast path did not take). */
export function resumeQueueName(environmentId: string): string {
  return `svc-resume.${environmentId}`;
}

/**
 * The name a worker's registry entry gives the runs of one svc queue that it claims straight from
 * `runs` (no job: claim-queued.ts): what a wake-up for such runs names, so that the worker woken
 * claims from `runs` instead of fetching the queue's jobs. Not a pg-boss queue.
 */
export function runsQueueName(environmentId: string, queueName: string): string {
  return `runs:${startQueueName(environmentId, queueName)}`;
}

/** Whether a name is runsQueueName's. */
export function isRunsQueueName(name: string): boolean {
  return name.startsWith("runs:");
}
