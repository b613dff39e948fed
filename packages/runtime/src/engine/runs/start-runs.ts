import type { Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import type { RunRow } from "./store.ts";
import { offerStarts } from "./transitions/offer-start.ts";

/** What starting a queued run needs to know of it. */
export type QueuedRun = Pick<RunRow, "id" | "environment_id" | "queue_name" | "concurrency_key" | "claim_from_runs">;

/**
 * Starts runs that just became QUEUED (triggered, their delay or retry backoff over, taken back
 * from a worker), in the transaction that queued them. A trigger's plain first attempts go to a
 * free worker as offers (`offer`: see offer-start.ts); every other run stays in `runs`, where the
 * workers of its queue claim it (claim-ready.ts), and the dispatcher wakes them.
 * Returns the ids of the runs offered.
 */
export async function startRuns(deps: Pick<EngineDeps, "dispatcher">, tx: Queryable, runs: QueuedRun[], now: Date, options: { offer: boolean }): Promise<Set<string>> {
  if (runs.length === 0) return new Set();
  const offered = options.offer ? await offerStarts(tx, runs.filter((r) => r.claim_from_runs).map((r) => r.id), now) : new Set<string>();
  const rest = offered.size === 0 ? runs : runs.filter((r) => !offered.has(r.id));
  if (rest.length > 0) {
    await deps.dispatcher.dispatch(
      tx,
      rest.map((r) => ({ kind: "start" as const, runId: r.id, environmentId: r.environment_id, queueName: r.queue_name, concurrencyKey: r.concurrency_key })),
      now,
    );
  }
  return offered;
}
