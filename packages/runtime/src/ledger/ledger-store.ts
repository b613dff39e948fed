import type { Queryable } from "../db/queryable.ts";
import { KEYED_EPOCH, type LedgerEntry, type LedgerKind } from "./entries.ts";

/** A run_ledger row as Postgres returns it (also from json_agg, where dates are strings). */
export interface LedgerRow {
  step_key: string;
  epoch: number;
  kind: LedgerKind;
  target: string | null;
  waitpoint_id: string | null;
  resolved: boolean;
  outcome: unknown;
  expires_at: Date | string | null;
}

export const ledgerEntryFromRow = (r: LedgerRow): LedgerEntry => ({
  stepKey: r.step_key,
  epoch: r.epoch,
  kind: r.kind,
  target: r.target,
  waitpointId: r.waitpoint_id,
  resolved: r.resolved,
  outcome: r.outcome,
  expiresAt: r.expires_at === null ? null : new Date(r.expires_at),
});

/** The entries an execution replays: its epoch's entries plus the run's keyed (cross-attempt) ones. */
export async function loadLedger(db: Queryable, runId: string, epoch: number): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerRow>(
    `SELECT step_key, epoch, kind, target, waitpoint_id, resolved, outcome, expires_at
     FROM run_ledger WHERE run_id = $1 AND epoch IN ($2, ${KEYED_EPOCH})`,
    [runId, epoch],
  );
  return rows.map(ledgerEntryFromRow);
}

/**
 * Records a memoised step's result, fenced by the execution's claim token so an abandoned
 * execution cannot write. Returns false when the fence rejected the write.
 */
export async function recordStep(
  db: Queryable,
  input: { runId: string; claimToken: string; epoch: number; stepKey: string; kind: LedgerKind; target: string | null; outcome: unknown; expiresAt?: Date | null; now: Date },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, expires_at, created_at, resolved_at)
     SELECT $1, $3, $4, $5, $6, true, $7, $8, $9, $9
     FROM runs WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING'
     ON CONFLICT (run_id, epoch, step_key) DO UPDATE
       SET kind = EXCLUDED.kind, target = EXCLUDED.target, resolved = true, outcome = EXCLUDED.outcome,
           expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at, resolved_at = EXCLUDED.resolved_at`,
    [input.runId, input.claimToken, input.epoch, input.stepKey, input.kind, input.target, JSON.stringify(input.outcome), input.expiresAt ?? null, input.now],
  );
  return (rowCount ?? 0) > 0;
}

export type WaitRegistration =
  | { kind: "resolved"; outcome: unknown }
  | { kind: "suspended" }
  | { kind: "fenced" }
  | { kind: "waitpoint_missing" };

/**
 * Registers a wait on a waitpoint in one transaction (resume-spike pitfall 5): takes the waitpoint
 * FOR SHARE (a concurrent completion waits behind us and then sees our ledger row), records the
 * ledger entry, and — unless the waitpoint is already finished, in which case the entry is
 * recorded resolved and the code continues inline — moves the run to WAITING and releases its claim.
 * Must be called inside a transaction.
 */
export async function registerWait(
  tx: Queryable,
  input: { runId: string; environmentId: string; claimToken: string; epoch: number; stepKey: string; kind: LedgerKind; target: string | null; waitpointId: string; expiresAt?: Date | null; now: Date },
): Promise<WaitRegistration> {
  const wp = await tx.query<{ status: string; output: string | null; output_type: string | null; output_is_error: boolean }>(
    `SELECT status, output, output_type, output_is_error FROM waitpoints WHERE id = $1 AND environment_id = $2 FOR SHARE`,
    [input.waitpointId, input.environmentId],
  );
  const waitpoint = wp.rows[0];
  if (!waitpoint) return { kind: "waitpoint_missing" };
  const fence = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING' FOR UPDATE`, [input.runId, input.claimToken]);
  if (fence.rowCount === 0) return { kind: "fenced" };
  const finished = waitpoint.status !== "WAITING";
  const outcome = finished ? outcomeOf(waitpoint) : null;
  await tx.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, outcome, expires_at, created_at, resolved_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $7 THEN $10::timestamptz END)
     ON CONFLICT (run_id, epoch, step_key) DO UPDATE
       SET kind = EXCLUDED.kind, target = EXCLUDED.target, waitpoint_id = EXCLUDED.waitpoint_id, resolved = EXCLUDED.resolved,
           outcome = EXCLUDED.outcome, expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at, resolved_at = EXCLUDED.resolved_at`,
    [input.runId, input.epoch, input.stepKey, input.kind, input.target, input.waitpointId, finished, outcome === null ? null : JSON.stringify(outcome), input.expiresAt ?? null, input.now],
  );
  if (finished) return { kind: "resolved", outcome };
  await tx.query(
    `UPDATE runs SET status = 'WAITING', claim_token = NULL, job_id = NULL, lease_expires_at = NULL, worker_id = NULL, updated_at = now()
     WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING'`,
    [input.runId, input.claimToken],
  );
  return { kind: "suspended" };
}

/** A finished waitpoint as a wait outcome (the same shape completeWaitpoint records). */
export function outcomeOf(w: { status: string; output: string | null; output_type: string | null; output_is_error: boolean }) {
  if (w.output_is_error || w.status === "TIMED_OUT") {
    let error: unknown = { message: "Waitpoint failed" };
    try {
      error = w.output ? JSON.parse(w.output) : error;
    } catch {}
    return { ok: false, error };
  }
  return { ok: true, output: w.output, outputType: w.output_type };
}
