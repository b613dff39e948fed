import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { notifyWaitersOfRun } from "./notify-waiters.ts";
import { FINAL_STATUSES, isFinal } from "./statuses.ts";
import { transitionRun, type RunRow } from "./store.ts";

export interface CancelResult {
  id: string;
  /** Every run this call moved to CANCELED: the run itself, then its unfinished descendants. Empty when it had already finished. */
  canceledRunIds: string[];
}

/**
 * Cancels a run and its unfinished descendants, in one transaction. A run that already finished is
 * left alone (the call still succeeds). Per status:
 * - WAITING: its unresolved ledger entries are deleted, so completing what it waited on later
 *   resumes nothing;
 * - EXECUTING / DEQUEUED: `svc_run_canceled` is notified so the worker running it aborts;
 * - QUEUED / DELAYED / PENDING_VERSION: the guarded update is enough (a dequeued job finds it final).
 * A parent waiting on a canceled run gets a failed outcome through the run's waitpoint
 * (notifyWaitersOfRun), as for any other final status.
 */
export async function cancelRun(deps: Pick<EngineDeps, "db" | "clock" | "dispatcher">, environmentId: string, runId: string): Promise<CancelResult> {
  return withTransaction(deps.db, (tx) => cancelRunInTransaction(deps, tx, environmentId, runId));
}

/** cancelRun in the caller's transaction `tx` (a bulk action's chunk: bulk-actions/process-chunk.ts). */
export async function cancelRunInTransaction(deps: Pick<EngineDeps, "clock" | "dispatcher">, tx: Queryable, environmentId: string, runId: string): Promise<CancelResult> {
  const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE id = $1 AND environment_id = $2 FOR UPDATE`, [runId, environmentId]);
  const run = rows[0];
  if (!run) throw new NotFoundError("Run not found");
  if (isFinal(run.status)) return { id: run.id, canceledRunIds: [] };
  const canceled: string[] = [];
  if (await cancelOne(deps, tx, run)) canceled.push(run.id);
  const { rows: descendants } = await tx.query<RunRow>(
    `WITH RECURSIVE tree AS (
       SELECT id FROM runs WHERE parent_run_id = $1
       UNION SELECT r.id FROM runs r JOIN tree t ON r.parent_run_id = t.id)
     SELECT runs.* FROM runs JOIN tree USING (id)
     WHERE runs.status <> ALL($2::text[]) ORDER BY runs.depth, runs.id FOR UPDATE OF runs`,
    [run.id, FINAL_STATUSES],
  );
  for (const child of descendants) if (await cancelOne(deps, tx, child)) canceled.push(child.id);
  return { id: run.id, canceledRunIds: canceled };
}

async function cancelOne(deps: Pick<EngineDeps, "clock" | "dispatcher">, tx: Queryable, run: RunRow): Promise<boolean> {
  const now = deps.clock.now();
  // A canceled run holds no claim or lease (the worker running it learns of the cancel, and its
  // writes are fenced by the status).
  const result = await transitionRun(tx, run.id, "CANCELED", now, { from: [run.status], set: { finished_at: now, claim_token: null, lease_expires_at: null, offered_at: null, offered_start: false } });
  if (!result.changed) return false;
  if (run.status === "WAITING") {
    await tx.query(`DELETE FROM run_ledger WHERE run_id = $1 AND NOT resolved`, [run.id]);
  }
  if (run.status === "EXECUTING" || run.status === "DEQUEUED") {
    await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.runCanceled, run.id]);
  }
  await notifyWaitersOfRun(deps, tx, result.run);
  return true;
}
