import type { Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import type { RunRow } from "./store.ts";

/** What starting a queued run needs to know of it. */
export type QueuedRun = Pick<RunRow, "id" | "environment_id" | "queue_name" | "concurrency_key" | "claim_from_runs">;

/**
 * Starts runs that a timer just made QUEUED (their delay or retry backoff over), in the
 * transaction that queued them: they stay in `runs`, where the workers of their queue claim them
 * (claim-ready.ts), and the dispatcher wakes those workers. (A trigger's runs never get here: its
 * INSERT offers them or wakes their workers itself, see insert-runs.ts.)
 */
export async function startRuns(deps: Pick<EngineDeps, "dispatcher">, tx: Queryable, runs: QueuedRun[], now: Date): Promise<void> {
  if (runs.length === 0) return;
  await deps.dispatcher.dispatch(
    tx,
    runs.map((r) => ({ kind: "start" as const, runId: r.id, environmentId: r.environment_id, queueName: r.queue_name, concurrencyKey: r.concurrency_key })),
    now,
  );
}
