import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { ReplayRunBody } from "../../contracts/runs.ts";
import { KEYED_EPOCH } from "../../ledger/entries.ts";
import { StepKeys } from "../../ledger/step-keys.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { replayInput } from "./replay-input.ts";
import type { RunStatus } from "./statuses.ts";
import type { RunRow } from "./store.ts";
import { triggerRunInTransaction, type TriggerResult } from "./trigger.ts";

/**
 * The statuses a run can be replayed from failure: it ended by failing. Not COMPLETED (nothing
 * failed), CANCELED (stopped on purpose, maybe mid-wait: replay it from the start), EXPIRED (it
 * never ran: there is nothing recorded), nor a live run (its ledger is still being written).
 */
export const REPLAYABLE_FROM_FAILURE: readonly RunStatus[] = ["FAILED", "CRASHED", "SYSTEM_FAILURE", "TIMED_OUT"];

/**
 * The ledger epoch of a replayed run's first attempt and of the entries copied into it. Above 0:
 * a claim reads the ledger of a run whose epoch is (claimed-columns.ts), and no start offer takes
 * it (offer-start.ts), as an offer carries no ledger.
 */
export const REPLAY_LEDGER_EPOCH = 1;

export interface ReplayFromFailureResult extends TriggerResult {
  /** How many recorded entries the new run starts with (0 for a run an idempotency key returned). */
  copiedEntries: number;
}

/**
 * Triggers a new run of a failed run's task that resumes from where it failed: its ledger starts
 * as the failed attempt's resolved entries (steps that returned, waits that completed, child and
 * batch results; the keyed ones too), copied in the transaction that inserts it. The new run
 * replays them on the current code, so recorded steps do not run again; the step that failed, and
 * everything after it, does. A wait still pending when the run failed is not copied: the new run
 * waits again. Lifecycle hook records are not copied: the new run's hooks run as any run's do.
 *
 * A recorded entry that no longer matches the code (another kind or name at the same step) fails
 * the new run with the NondeterminismError the replay of any run gives, at that call, before the
 * call does anything. The new run keeps the failed run's parent (same run tree), payload, queue,
 * tags, metadata and limits; `overrides` replace them as a replay's do, except the payload: the
 * recorded steps were computed from the original one.
 */
export async function replayRunFromFailure(deps: EngineDeps, env: Environment, runId: string, overrides: ReplayRunBody = {}): Promise<ReplayFromFailureResult> {
  if (overrides.payload !== undefined || overrides.payloadType !== undefined) {
    throw new ValidationError(`payload cannot be changed when replaying from the failure: the recorded steps were computed from the original payload (replay from the start to change it)`);
  }
  return withTransaction(deps.db, async (tx) => {
    // FOR SHARE: a retention sweep deleting the run (and its ledger) waits for the copy.
    const { rows } = await tx.query<RunRow & { parent_exists: boolean }>(
      `SELECT r.*, EXISTS (SELECT 1 FROM runs p WHERE p.id = r.parent_run_id AND p.environment_id = r.environment_id) AS parent_exists
       FROM runs r WHERE r.id = $1 AND r.environment_id = $2 FOR SHARE OF r`,
      [runId, env.id],
    );
    const run = rows[0];
    if (!run) throw new NotFoundError("Run not found");
    if (!REPLAYABLE_FROM_FAILURE.includes(run.status as RunStatus)) {
      throw new UnprocessableError(
        `Run ${run.id} is ${run.status}: only a run that ended ${REPLAYABLE_FROM_FAILURE.join(", ")} can be replayed from its failure (replay it from the start instead)`,
      );
    }
    const { payload, options } = replayInput(run, overrides);
    const lineage = { ledgerEpoch: REPLAY_LEDGER_EPOCH, ...(run.parent_exists && run.parent_run_id ? { parentRunId: run.parent_run_id } : {}) };
    const result = await triggerRunInTransaction(deps, tx, env, run.task_identifier, payload, options, lineage);
    // An idempotency key given as an override that a live run holds: that run, as it is.
    if (result.isCached) return { ...result, copiedEntries: 0 };
    const copiedEntries = await copyRecordedEntries(tx, { from: run.id, to: result.id, environmentId: env.id });
    return { ...result, copiedEntries };
  });
}

/**
 * Copies the resolved entries of run `from`'s last attempt (its ledger epoch) and its keyed
 * entries into run `to`'s first attempt (REPLAY_LEDGER_EPOCH; keyed ones stay keyed). An entry
 * the failed attempt passed by its key (`used_epoch`) is marked passed by the new attempt, so it
 * replays whatever its TTL, as it would have in the failed attempt. Returns how many were copied.
 */
export async function copyRecordedEntries(tx: Queryable, input: { from: string; to: string; environmentId: string }): Promise<number> {
  const { rowCount } = await tx.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, outcome, expires_at, created_at, resolved_at, used_epoch)
     SELECT $2, CASE WHEN l.epoch = $4 THEN $4 ELSE $5 END, l.step_key, l.kind, l.target, l.waitpoint_id, true, l.outcome, l.expires_at,
       l.created_at, l.resolved_at, CASE WHEN l.used_epoch = s.ledger_epoch THEN $5 END
     FROM runs s JOIN run_ledger l ON l.run_id = s.id AND l.epoch IN (s.ledger_epoch, $4)
     WHERE s.id = $1 AND s.environment_id = $3 AND l.resolved AND NOT starts_with(l.step_key, $6)`,
    [input.from, input.to, input.environmentId, KEYED_EPOCH, REPLAY_LEDGER_EPOCH, StepKeys.hook("")],
  );
  return rowCount ?? 0;
}
