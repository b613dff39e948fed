import type { Queryable } from "../db/queryable.ts";
import { wakeWorkers, type ReadyRuns } from "./runs/wake-workers.ts";

/**
 * A run that became ready to be claimed from `runs`: a start (its delay or backoff over, given
 * back, moved to another claim) or a resume. A trigger's INSERT wakes the workers of its runs
 * itself (insert-runs.ts).
 */
export interface RunJob {
  kind: "start" | "resume";
  runId: string;
  environmentId: string;
  queueName: string;
  concurrencyKey?: string | null;
}

/**
 * Makes runs that became ready known to the workers that claim them, inside the transaction that
 * made them ready: the run rows are the queue, so this writes nothing, it only wakes workers
 * (when the transaction commits). An interface so that tests of the engine alone can wake nobody.
 */
export interface Dispatcher {
  /** `now` (the engine's clock) is what the registry's leases are compared with. */
  dispatch(tx: Queryable, jobs: RunJob[], now: Date): Promise<void>;
}

/** The dispatcher of every process: wakes the workers of each run's queue (wakeWorkers). */
export class WakeDispatcher implements Dispatcher {
  async dispatch(tx: Queryable, jobs: RunJob[], now: Date): Promise<void> {
    const byQueue = new Map<string, ReadyRuns>();
    for (const job of jobs) {
      const key = `${job.environmentId}\n${job.queueName}`;
      const entry = byQueue.get(key) ?? { environmentId: job.environmentId, queueName: job.queueName, count: 0 };
      entry.count++;
      byQueue.set(key, entry);
    }
    await wakeWorkers(tx, [...byQueue.values()], now);
  }
}
