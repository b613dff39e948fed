import type { Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint, type WaitOutcome } from "../waitpoints/complete-waitpoint.ts";
import type { RunRow } from "./store.ts";
import { FINAL_STATUSES, isFinal } from "./statuses.ts";
import { parseStored, StoredRunErrorSchema } from "../../ledger/outcomes.ts";

/** A child run finished: complete the waitpoint its parent waits on (and the batch's, when it was the last). */
/** Call in the transaction that moved the run to a final status (completed, failed, canceled …). */
export async function notifyWaitersOfRun(deps: Pick<EngineDeps, "clock">, tx: Queryable, run: RunRow): Promise<void> {
  const { rows } = await tx.query<{ id: string }>(`SELECT id FROM waitpoints WHERE completed_by_run_id = $1 AND status = 'WAITING'`, [run.id]);
  for (const w of rows) await completeWaitpoint(deps, tx, w.id, childOutcome(run), { status: "COMPLETED" });
  if (run.batch_id) await completeBatchIfDone(deps, tx, run.batch_id);
  if (run.awaited) {
    // Batches this run answered an item of, through an idempotency key (see batch_members).
    const member = await tx.query<{ batch_id: string }>(`SELECT DISTINCT batch_id FROM batch_members WHERE run_id = $1`, [run.id]);
    for (const { batch_id } of member.rows) await completeBatchIfDone(deps, tx, batch_id);
  }
}

export function childOutcome(run: Pick<RunRow, "id" | "status" | "output" | "output_type" | "error">): WaitOutcome {
  if (run.status === "COMPLETED") return { ok: true, output: run.output, outputType: run.output_type, runId: run.id };
  const error = parseStored(StoredRunErrorSchema.nullable(), run.error, `the error of run ${run.id}`) ?? {};
  return { ok: false, error: { name: error.name ?? "Error", message: error.message ?? `child run ended ${run.status}`, code: run.status }, runId: run.id };
}

/** Completes the waitpoint of a batch whose runs have all ended (a no-op until then). */
export async function completeBatchIfDone(deps: Pick<EngineDeps, "clock">, tx: Queryable, batchId: string): Promise<void> {
  const waiting = await tx.query<{ id: string }>(`SELECT id FROM waitpoints WHERE completed_by_batch_id = $1 AND status = 'WAITING'`, [batchId]);
  if (waiting.rows.length === 0) return;
  // Serialise the last children of a batch so exactly one of them sees "all done".
  const batch = await tx.query<{ run_count: number }>(`SELECT run_count FROM batches WHERE id = $1 FOR UPDATE`, [batchId]);
  // The batch's own runs and the runs an idempotency key answered items with (one row per item:
  // a run may answer several), in item order.
  const runs = await tx.query<RunRow>(
    `SELECT * FROM (
       SELECT r.*, r.batch_index AS item_index FROM runs r WHERE r.batch_id = $1
       UNION ALL
       SELECT r.*, m.batch_index AS item_index FROM batch_members m JOIN runs r ON r.id = m.run_id WHERE m.batch_id = $1) items
     ORDER BY item_index`,
    [batchId],
  );
  if (runs.rows.length < (batch.rows[0]?.run_count ?? 0) || runs.rows.some((r) => !isFinal(r.status))) return;
  const results = runs.rows.map((r) => ({ ...childOutcome(r), id: r.id, taskIdentifier: r.task_identifier }));
  for (const w of waiting.rows) {
    await completeWaitpoint(deps, tx, w.id, { ok: true, output: JSON.stringify(results), outputType: "application/json" }, { status: "COMPLETED" });
  }
}

/**
 * Attaches a waiter to a run another trigger made (an idempotency key handed it back): marks it
 * `awaited` so that its ending wakes waiters, or — when it has already ended — returns it, so the
 * caller completes its waitpoint with the run's outcome at once. The UPDATE takes the run's row
 * lock: an ending in progress is waited for, and then seen.
 */
export async function attachWaiter(tx: Queryable, runId: string): Promise<RunRow | null> {
  const marked = await tx.query(`UPDATE runs SET awaited = true WHERE id = $1 AND NOT (status = ANY($2::text[]))`, [runId, FINAL_STATUSES]);
  if (marked.rowCount) return null;
  const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [runId]);
  return rows[0] ?? null;
}
