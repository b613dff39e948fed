import { oldestQueuedRun, unservedTasks, type Clock, type Queryable, type UnservedTask } from "@svc/runtime/engine";

/** How often `svc dev` looks for queued runs no worker serves. */
export const UNSERVED_CHECK_MS = 2000;

/**
 * `svc dev`'s line for runs nothing will run: queued runs of a task no live worker of the dev
 * environment serves. Said once per task, until a worker serves it (then again if it stops being
 * served): a typo in a task id, or a task not exported from a tasks file, shows at once rather
 * than as a run that never starts.
 */
export class UnservedNotices {
  private readonly announced = new Set<string>();

  constructor(private readonly deps: { db: Queryable; environmentId: string; clock: Clock; print: (line: string) => void }) {}

  /** One look: a line for each task newly unserved; tasks served again are forgotten. */
  async check(): Promise<void> {
    const { db, environmentId, clock, print } = this.deps;
    const unserved = await unservedTasks(db, environmentId, clock.now());
    const current = new Set(unserved.map((u) => u.task));
    for (const task of this.announced) if (!current.has(task)) this.announced.delete(task);
    for (const task of unserved) {
      if (this.announced.has(task.task)) continue;
      const runId = await oldestQueuedRun(db, environmentId, task.task);
      if (runId === null) continue; // started or canceled since
      this.announced.add(task.task);
      print(unservedLine(task, runId));
    }
  }
}

/** `run_… (task-x) is queued but no worker serves task-x: is it exported from your tasks file?` */
export function unservedLine(task: UnservedTask, runId: string): string {
  const more = task.queued > 1 ? ` (and ${task.queued - 1} more)` : "";
  const why = task.registered
    ? "the worker that had it is gone (was the task removed, or did the tasks fail to load?)"
    : "is it exported from your tasks file?";
  return `${runId} (${task.task}) is queued${more} but no worker serves ${task.task}: ${why}`;
}

/**
 * Checks every `intervalMs` until stopped; a failed check is reported once per distinct message
 * (a database going away is said once, not every interval).
 */
export function checkUnservedEvery(notices: UnservedNotices, intervalMs: number, onError: (error: Error) => void): { stop(): Promise<void> } {
  let lastError = "";
  // One check at a time: a tick that finds one still running is skipped.
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= notices
      .check()
      .then(
        () => void (lastError = ""),
        (error: Error) => {
          if (error.message !== lastError) onError(error);
          lastError = error.message;
        },
      )
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
