import type { RunStatus } from "./statuses.ts";

/** What created runs outside the API's routes: task code's triggerAndWait/batchTriggerAndWait, a schedule's tick, a session's next run, a bulk replay. */
export type TriggeredBy = "child" | "schedule" | "session" | "bulkAction";

/**
 * What engine work tells the process that called it about the runs it created and ended, so that
 * the process can count them in its own metrics (the worker's svc_runs_triggered_total and
 * svc_runs_finished_total): the engine function knows what its statement did, the caller owns the
 * counters. Told only once the transaction that did it committed (a rolled-back or retried try
 * counts nothing), and a run is told once (SKIP LOCKED and guarded updates make each creation and
 * ending happen in exactly one process). A call is a counter increment's worth of work.
 */
export interface RunTally {
  /** `count` runs were created (never a run an idempotency key found). */
  triggered(count: number, by: TriggeredBy): void;
  /** `count` runs reached the final `status`. */
  finished(status: RunStatus, count: number): void;
}

/** The tally of a caller that counts nothing (tests, the API's own calls, which count at their routes). */
export const NO_RUN_TALLY: RunTally = { triggered() {}, finished() {} };
