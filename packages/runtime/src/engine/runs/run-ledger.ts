import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import type { RunLedgerResponse } from "../../contracts/run-ledger.ts";
import { KEYED_EPOCH } from "../../ledger/entries.ts";
import type { RunStatus } from "./statuses.ts";

/**
 * A run's ledger as a replay of its current (or last) attempt reads it: the entries of its ledger
 * epoch and its keyed ones, oldest first. What `svc runs replay --local` replays.
 */
export async function runLedger(db: Queryable, environmentId: string, runId: string): Promise<RunLedgerResponse> {
  const { rows } = await db.query<{ task_identifier: string; status: RunStatus; attempt_number: number; ledger_epoch: number; entries: RunLedgerResponse["entries"] }>(
    `SELECT r.task_identifier, r.status, r.attempt_number, r.ledger_epoch, coalesce((
       SELECT json_agg(json_build_object('stepKey', l.step_key, 'epoch', l.epoch, 'kind', l.kind, 'target', l.target, 'waitpointId', l.waitpoint_id,
                'resolved', l.resolved, 'outcome', l.outcome, 'expiresAt', l.expires_at, 'usedEpoch', l.used_epoch)
              ORDER BY l.created_at, l.epoch, l.step_key)
       FROM run_ledger l WHERE l.run_id = r.id AND l.epoch IN (r.ledger_epoch, $3)), '[]') AS entries
     FROM runs r WHERE r.id = $1 AND r.environment_id = $2`,
    [runId, environmentId, KEYED_EPOCH],
  );
  const row = rows[0];
  if (!row) throw new NotFoundError("Run not found");
  const entries = row.entries.map((e) => ({ ...e, expiresAt: e.expiresAt === null ? null : new Date(e.expiresAt).toISOString() }));
  return { runId, taskIdentifier: row.task_identifier, status: row.status, attemptNumber: row.attempt_number, epoch: row.ledger_epoch, entries };
}
