import type { Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import type { RunRow } from "./store.ts";

/** What starting a queued run needs to know of it. */
export type QueuedRun = Pick<RunRow, "id" | "environment_id" | "queue_name" | "concurrency_key" | "claim_from_runs">;

/**
 * Starts runs that just became QUEUED (triggered but offered to no worker, their delay or retry
 * backoff over, taken back from a worker), in the transaction that queued them: they stay in
 * `runs`, where the workers of their queue claim them (claim-ready.ts), and the dispatcher wakes
 * those workers. (A trigger's plain first attempts that a free worker can take never get here:
 * the insert offers them, see transitions/offer-start.ts.)
 */
export async function startRuns(deps: Pick<EngineDeps, "dispatcher">, tx: Queryable, runs: QueuedRun[], now: Date): Promise<void> {
  if (runs.length === 0) return;
  await deps.dispatcher.dispatch(
    tx,
    runs.map((r) => ({ kind: "start" as const, runId: r.id, environmentId: r.environment_id, queueName: r.queue_name, concurrencyKey: r.concurrency_key })),
    now,
  );
}
