import type { Queryable } from "../../db/queryable.ts";

/** A run that waits on a waitpoint (an unresolved ledger entry of it). */
export interface WaitingRun {
  id: string;
  taskIdentifier: string;
  status: string;
  since: Date;
}

/**
 * The runs of an environment whose ledger still waits on `waitpointId`, oldest wait first, at most
 * `limit`. Uses the partial index on unresolved entries (run_ledger_waiting), so it stays cheap
 * however long the ledger grows; once completed, a waitpoint has no waiting runs to show.
 */
export async function runsWaitingOn(db: Queryable, environmentId: string, waitpointId: string, limit = 100): Promise<WaitingRun[]> {
  const { rows } = await db.query<WaitingRun>(
    `SELECT r.id, r.task_identifier AS "taskIdentifier", r.status, min(l.created_at) AS since
       FROM run_ledger l JOIN runs r ON r.id = l.run_id
      WHERE l.waitpoint_id = $1 AND NOT l.resolved AND r.environment_id = $2
      GROUP BY r.id, r.task_identifier, r.status
      ORDER BY since LIMIT $3`,
    [waitpointId, environmentId, limit],
  );
  return rows;
}
