import { withTransaction } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import type { RunRow } from "./store.ts";
import { startRuns } from "./start-runs.ts";

/**
 * A queue that has a concurrencyLimit now (a worker declaring it registered) may hold runs queued
 * while it had none, marked to be claimed straight from `runs` (claim_from_runs), where no limit is
 * counted. They are moved onto start jobs, whose queue counts it: the flag is cleared, and those
 * that can start now get their job (the others get one when their delay or backoff ends). Returns
 * how many runs moved. A trigger that read the queue as unlimited just before the registration
 * committed may still leave one run to be claimed from `runs`, outside the limit, once.
 */
export async function moveRunsOfLimitedQueues(deps: Pick<EngineDeps, "db" | "dispatcher">, environmentId: string, queues: string[], now: Date): Promise<number> {
  if (queues.length === 0) return 0;
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query<Pick<RunRow, "id" | "environment_id" | "status" | "queue_name" | "concurrency_key" | "available_at" | "claim_from_runs">>(
      `UPDATE runs SET claim_from_runs = false
       WHERE id IN (SELECT id FROM runs WHERE environment_id = $1 AND status IN ('QUEUED', 'DELAYED') AND claim_from_runs AND queue_name = ANY ($2::text[])
                    FOR UPDATE SKIP LOCKED)
       RETURNING id, environment_id, status, queue_name, concurrency_key, available_at, claim_from_runs`,
      [environmentId, queues],
    );
    await startRuns(deps, tx, rows.filter((r) => r.status === "QUEUED" && r.available_at === null), now, { offer: false });
    return rows.length;
  });
}
