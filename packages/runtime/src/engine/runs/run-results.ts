import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { getBatch } from "../batches/store.ts";
import { FINAL_STATUSES, type RunStatus } from "./statuses.ts";

/** What a finished run's result is made of (GET /api/v1/runs/{id}/result, a batch's results). */
export interface RunResultRow {
  id: string;
  task_identifier: string;
  status: RunStatus;
  /** As stored: inline text, or a packet path when `output_type` is application/store. */
  output: string | null;
  output_type: string | null;
  error: unknown;
}

const RESULT_COLUMNS = "id, task_identifier, status, output, output_type, error";

/** The run's result row once it has finished; NotFoundError for an unknown run and for one still under way. */
export async function runResult(db: Queryable, environmentId: string, runId: string): Promise<RunResultRow> {
  const { rows } = await db.query<RunResultRow>(`SELECT ${RESULT_COLUMNS} FROM runs WHERE id = $1 AND environment_id = $2`, [runId, environmentId]);
  const run = rows[0];
  if (!run) throw new NotFoundError("Run not found");
  if (!FINAL_STATUSES.includes(run.status)) throw new NotFoundError(`Run ${run.id} has not finished (it is ${run.status})`);
  return run;
}

/**
 * The finished runs of a batch of the environment, in item order (its own runs and those an
 * idempotency key answered items with); runs still under way are left out.
 */
export async function batchResults(db: Queryable, environmentId: string, batchId: string): Promise<{ id: string; runs: RunResultRow[] }> {
  const batch = await getBatch(db, batchId, environmentId);
  if (!batch) throw new NotFoundError("Batch not found");
  const { rows } = await db.query<RunResultRow>(
    `SELECT ${RESULT_COLUMNS} FROM (
       SELECT ${RESULT_COLUMNS}, batch_index AS item_index, created_at FROM runs WHERE batch_id = $1 AND environment_id = $2
       UNION ALL
       SELECT r.id, r.task_identifier, r.status, r.output, r.output_type, r.error, m.batch_index, r.created_at
       FROM batch_members m JOIN runs r ON r.id = m.run_id AND r.environment_id = $2 WHERE m.batch_id = $1) items
     WHERE status = ANY ($3::text[])
     ORDER BY item_index, created_at`,
    [batch.id, environmentId, FINAL_STATUSES],
  );
  return { id: batch.id, runs: rows };
}
