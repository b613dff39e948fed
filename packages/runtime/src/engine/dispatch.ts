import type { Queryable } from "../db/queryable.ts";

/**
 * One unit of work for a worker: start (or restart) a run's attempt, or resume a waiting run.
 * The engine only knows this interface; the pg-boss implementation lives in packages/queue (@svc/queue).
 */
export interface RunJob {
  kind: "start" | "resume";
  runId: string;
  environmentId: string;
  queueName: string;
  concurrencyKey?: string | null;
  /** A resume that must take a slot of its run's queue (the queue has a concurrencyLimit). */
  throughQueue?: boolean;
  /**
   * A start that workers claim straight from `runs` (claim-queued.ts): no job is written, the
   * workers that should claim it are only woken.
   */
  inTable?: boolean;
}

export interface Dispatcher {
  /**
   * Enqueues the jobs inside `tx`, so they exist if and only if the caller commits. `now` (the
   * engine's clock) is what the registry's leases are compared with when workers are woken.
   */
  dispatch(tx: Queryable, jobs: RunJob[], now: Date): Promise<void>;
}
