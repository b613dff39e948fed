import { prepared, type Queryable } from "../db/queryable.ts";
import type { LedgerEntry, LedgerKind } from "./entries.ts";
import type { WaitOptions } from "../sdk/run-context.ts";
import { REGISTER_WAIT_SQL } from "../engine/runs/transitions/suspend.ts";

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
  used_epoch?: number | null;
  /** When the entry was resolved (a wait: its waitpoint's completion time); claims load it. */
  resolved_at?: Date | string | null;
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
  usedEpoch: r.used_epoch ?? null,
  resolvedAt: r.resolved_at ?? null,
});

/**
 * Records a memoised step's result, fenced by the execution's claim token so an abandoned
 * execution cannot write. Returns false when the fence rejected the write.
 *
 * The fence holds the run's row FOR SHARE until the record commits: a claim taking the run over
 * (FOR UPDATE) waits for the record and then reads it (svc_claimed_ledger), and a record that
 * waited for a claim re-checks the token on the claimed row and is refused. Read without a lock,
 * both would pass: the record in a snapshot from before the claim, the claim's ledger in one from
 * before the record, and the step would run again in the new execution.
 */
export async function recordStep(
  db: Queryable,
  input: { runId: string; claimToken: string; epoch: number; stepKey: string; kind: LedgerKind; target: string | null; outcome: unknown; expiresAt?: Date | null; now: Date },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, expires_at, created_at, resolved_at)
     SELECT $1, $3, $4, $5, $6, true, $7, $8, $9, $9
     FROM runs WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING' FOR SHARE
     ON CONFLICT (run_id, epoch, step_key) DO UPDATE
       SET kind = EXCLUDED.kind, target = EXCLUDED.target, resolved = true, outcome = EXCLUDED.outcome,
           expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at, resolved_at = EXCLUDED.resolved_at`,
    [input.runId, input.claimToken, input.epoch, input.stepKey, input.kind, input.target, JSON.stringify(input.outcome), input.expiresAt ?? null, input.now],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Whether this execution still holds the run's claim, locking the run's row for the rest of the
 * caller's transaction when it does. A wait that creates what it waits on (child runs, a batch, a
 * sleep's waitpoint) checks this first: an execution that lost its run (canceled, or its lease
 * lapsed and another execution took over) would otherwise commit children nobody waits on — and
 * a cancel running meanwhile would not see them to cancel them. Holding the row makes a cancel
 * wait for our commit, after which it sees the children.
 */
export async function holdClaim(tx: Queryable, runId: string, claimToken: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    prepared("svc_hold_claim", `SELECT 1 FROM runs WHERE id = $1 AND claim_token = $2 AND status = 'EXECUTING' FOR UPDATE`, [runId, claimToken]),
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Records that the executing attempt (epoch `attemptEpoch`) passed a keyed entry by its key, fenced
 * by its claim token; false when the fence rejected it. From then on a replay of this attempt
 * passes the entry again even once its TTL ran out (see LedgerSession.lookup).
 */
export async function markKeyedEntryUsed(
  db: Queryable,
  input: { runId: string; claimToken: string; epoch: number; stepKey: string; attemptEpoch: number },
): Promise<boolean> {
  const { rowCount } = await db.query(
    // The run's row held FOR SHARE, as recordStep holds it, for the same reason.
    `WITH fence AS (SELECT 1 FROM runs r WHERE r.id = $1 AND r.claim_token = $2 AND r.status = 'EXECUTING' FOR SHARE)
     UPDATE run_ledger l SET used_epoch = $5
     WHERE EXISTS (SELECT 1 FROM fence) AND l.run_id = $1 AND l.epoch = $3 AND l.step_key = $4`,
    [input.runId, input.claimToken, input.epoch, input.stepKey, input.attemptEpoch],
  );
  return (rowCount ?? 0) > 0;
}

/** A waitpoint made for a wait, in the registering transaction. */
export interface MadeWaitpoint {
  id: string;
  /** The runs made with it (the child runs a triggerAndWait or batchTriggerAndWait created): counted once the transaction committed. */
  runsTriggered?: number;
}

/** A wait task code asks for: on the waitpoint recorded at this step, or on one `makeWaitpoint` makes in the registering transaction. */
export interface WaitRequest {
  key: { stepKey: string; epoch: number };
  kind: LedgerKind;
  target: string;
  existingWaitpointId: string | null;
  options?: WaitOptions | undefined;
  makeWaitpoint: (tx: Queryable) => Promise<MadeWaitpoint>;
}

export type WaitRegistration =
  | { kind: "resolved"; outcome: unknown }
  /** `ledgerVersion`: the run's ledger_version after this suspension raised it (migration 0027). */
  | { kind: "suspended"; ledgerVersion: number | null }
  | { kind: "fenced" }
  | { kind: "waitpoint_missing" };

/**
 * Registers a wait on a waitpoint in ONE statement (so one implicit transaction: a completion
 * cannot slip between the ledger row and the run's WAITING): it takes the waitpoint FOR SHARE (a concurrent completion waits behind it and then,
 * in its next statement, sees our ledger row), fences the run by its claim token, records the
 * ledger entry, and — unless the waitpoint is already finished, in which case the entry is
 * recorded resolved and the code continues inline — moves the run to WAITING and releases its claim.
 */
export async function registerWait(
  db: Queryable,
  input: {
    runId: string;
    environmentId: string;
    claimToken: string;
    epoch: number;
    stepKey: string;
    kind: LedgerKind;
    target: string | null;
    waitpointId: string;
    expiresAt?: Date | null;
    now: Date;
    /** The executing attempt's ledger epoch (recorded as used_epoch; see LedgerEntry.usedEpoch). */
    attemptEpoch?: number;
  },
): Promise<WaitRegistration> {
  const { rows } = await db.query<{ found: boolean; fenced: boolean; status: string | null; output: string | null; output_type: string | null; output_is_error: boolean | null; ledger_version: number | null }>(
    prepared(
      "svc_register_wait",
      REGISTER_WAIT_SQL,
      [input.runId, input.environmentId, input.claimToken, input.epoch, input.stepKey, input.waitpointId, input.kind, input.target, input.expiresAt ?? null, input.now, input.attemptEpoch ?? null],
    ),
  );
  const row = rows[0]!;
  if (!row.found) return { kind: "waitpoint_missing" };
  if (row.fenced) return { kind: "fenced" };
  if (row.status === "WAITING") return { kind: "suspended", ledgerVersion: row.ledger_version };
  return { kind: "resolved", outcome: outcomeOf({ status: row.status!, output: row.output, output_type: row.output_type, output_is_error: row.output_is_error ?? false }) };
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
