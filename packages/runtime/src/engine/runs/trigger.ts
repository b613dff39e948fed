import type { Queryable } from "../../db/queryable.ts";
import { withTransaction } from "../../db/queryable.ts";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { EngineDeps } from "../deps.ts";
import { assertPacketUploaded } from "../packets/store.ts";
import type { Environment } from "../tenancy/environments.ts";
import { pushPendingDebouncedRun, setDebounceKeys } from "./debounce.ts";
import { insertRuns, type InsertedRun } from "./insert-runs.ts";
import { planRun, type RunPlan, type TriggerLineage } from "./plan-run.ts";
import { freesIdempotencyKey } from "./statuses.ts";
import type { RunRow } from "./store.ts";

export { normalizeTags, MAX_TAGS, MAX_TAG_LENGTH, DEFAULT_IDEMPOTENCY_TTL_MS, type TriggerLineage } from "./plan-run.ts";

export interface TriggerResult {
  id: string;
  isCached: boolean;
  /** The new run's id, status and queue; the whole row for a cached run. */
  run: InsertedRun | RunRow;
}

/** One run to trigger in a bulk call. */
export interface TriggerInput {
  taskIdentifier: string;
  payload: unknown;
  options?: TriggerOptions;
  lineage?: TriggerLineage;
}

/**
 * Creates a run (or returns the live run holding the same idempotency key) and enqueues it,
 * all in `tx`. Unknown task ids are accepted: the run stays QUEUED until a worker has the task.
 */
export async function triggerRunInTransaction(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  env: Environment,
  taskIdentifier: string,
  payload: unknown,
  options: TriggerOptions = {},
  lineage: TriggerLineage = {},
): Promise<TriggerResult> {
  const [result] = await triggerRunsInTransaction(deps, tx, env, [{ taskIdentifier, payload, options, lineage }]);
  return result!;
}

/**
 * Triggers many runs in `tx` with one multi-row INSERT, which also offers first attempts to free
 * workers and wakes the workers of the other runs' queues. Inputs with an idempotency key are
 * resolved first (a live run with the key is returned, isCached); debounced inputs push back the
 * pending run of their key (returned, isCached) or create one (debounce.ts). Results are in input
 * order. Errors name the failing input's index when there is more than one. `tx` may be a pool when `needsTransaction(inputs)` is
 * false: the INSERT is then the only write, and commits alone (see triggerRuns).
 */
export async function triggerRunsInTransaction(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  env: Environment,
  inputs: TriggerInput[],
  describe: (index: number) => string = (index) => `item ${index}`,
): Promise<TriggerResult[]> {
  const now = deps.clock.now();
  const parents = await loadParents(tx, env, inputs);
  const results: (TriggerResult | null)[] = inputs.map(() => null);
  const plans: { index: number; plan: RunPlan }[] = [];
  let delayed = false;
  for (const [index, input] of inputs.entries()) {
    const options = input.options ?? {};
    const lineage = input.lineage ?? {};
    try {
      const plan = planRun(input.taskIdentifier, input.payload, options, lineage, parents.get(lineage.parentRunId ?? options.parentRunId ?? "") ?? null, now);
      if (plan.packet.type === "application/store") await assertPacketUploaded(tx, env.id, plan.packet.data!);
      if (plan.idempotencyKey) {
        const cached = await findLiveIdempotentRun(tx, env.id, plan.taskIdentifier, plan.idempotencyKey, now);
        if (cached) {
          results[index] = { id: cached.id, isCached: true, run: cached };
          continue;
        }
      }
      if (options.debounce) {
        // Debounced: the pending run with the key is pushed back, else a new run takes the key now,
        // so that a later input of this call with the same key finds it (debounce.ts).
        const pending = await pushPendingDebouncedRun(tx, env.id, plan, options.debounce, options, now);
        if (pending) {
          results[index] = { id: pending.id, isCached: true, run: pending };
          continue;
        }
        const [row] = await insertRuns(tx, env, [plan], now, { offer: false });
        if (row) {
          await setDebounceKeys(tx, env.id, [{ id: row.id, key: options.debounce.key }]);
          results[index] = { id: row.id, isCached: false, run: row };
          delayed = true;
          continue;
        }
        // An idempotency key another transaction took meanwhile: answered below, as any such run.
      }
      plans.push({ index, plan });
    } catch (error) {
      throw inputs.length > 1 ? withLabel(error, describe(index)) : error;
    }
  }
  // First attempts a free worker can take are offered to it by the insert itself.
  const inserted = new Map((await insertRuns(tx, env, plans.map((p) => p.plan), now, { offer: true })).map((row) => [row.id, row]));
  for (const { index, plan } of plans) {
    const row = inserted.get(plan.id);
    if (row) {
      results[index] = { id: row.id, isCached: false, run: row };
      continue;
    }
    // Another transaction inserted the same key after our lookup and committed: return its run.
    const cached = await findLiveIdempotentRun(tx, env.id, plan.taskIdentifier, plan.idempotencyKey!, now);
    if (!cached) throw new Error("idempotent insert conflicted but no run holds the key");
    results[index] = { id: cached.id, isCached: true, run: cached };
  }
  // The rest are left for workers to claim, and the workers of their queues were woken by the insert.
  if (delayed || plans.some((p) => p.plan.status === "DELAYED")) await tx.query(`SELECT pg_notify('svc_timers', '')`);
  return results as TriggerResult[];
}

async function loadParents(tx: Queryable, env: Environment, inputs: TriggerInput[]): Promise<Map<string, RunPlan["parent"]>> {
  const ids = [...new Set(inputs.map((i) => i.lineage?.parentRunId ?? i.options?.parentRunId).filter((id): id is string => !!id))];
  if (ids.length === 0) return new Map();
  const { rows } = await tx.query<Pick<RunRow, "id" | "root_run_id" | "depth">>(
    `SELECT id, root_run_id, depth FROM runs WHERE id = ANY($1::text[]) AND environment_id = $2`,
    [ids, env.id],
  );
  const found = new Map(rows.map((r) => [r.id, r]));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw new UnprocessableError(`parentRunId: run ${missing} not found`);
  return found;
}

function withLabel(error: unknown, label: string): unknown {
  if (error instanceof ValidationError) return new ValidationError(`${label}: ${error.message}`, { cause: error });
  if (error instanceof UnprocessableError) return new UnprocessableError(`${label}: ${error.message}`, { cause: error });
  return error;
}

/**
 * The run that still holds `key`. Runs that failed or expired free their key, as does a key past
 * its TTL; the key is cleared on the old run so the new one can take it.
 */
async function findLiveIdempotentRun(db: Queryable, environmentId: string, taskIdentifier: string, key: string, now: Date): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>(
    `SELECT * FROM runs WHERE environment_id = $1 AND task_identifier = $2 AND idempotency_key = $3 FOR UPDATE`,
    [environmentId, taskIdentifier, key],
  );
  const existing = rows[0];
  if (!existing) return null;
  const expired = existing.idempotency_key_expires_at !== null && existing.idempotency_key_expires_at.getTime() <= now.getTime();
  if (expired || freesIdempotencyKey(existing.status)) {
    await db.query(`UPDATE runs SET idempotency_key = NULL, updated_at = $2 WHERE id = $1`, [existing.id, now]);
    return null;
  }
  return existing;
}

/** Triggers one run on its own (see triggerRuns). */
export async function triggerRun(
  deps: EngineDeps,
  env: Environment,
  taskIdentifier: string,
  payload: unknown,
  options: TriggerOptions = {},
  lineage: TriggerLineage = {},
): Promise<TriggerResult> {
  const [result] = await triggerRuns(deps, env, [{ taskIdentifier, payload, options, lineage }]);
  return result!;
}

/**
 * Triggers runs on their own: in one statement that commits alone when that is all they need (no
 * idempotency key to look up, no debounce key to lock, no parent run to read, no uploaded payload to check, one INSERT's
 * worth), else in a transaction of their own. A trigger is then one round trip to Postgres, as
 * starting a workflow is in DBOS.
 */
export async function triggerRuns(deps: EngineDeps, env: Environment, inputs: TriggerInput[], describe?: (index: number) => string): Promise<TriggerResult[]> {
  if (!needsTransaction(inputs)) return triggerRunsInTransaction(deps, deps.db, env, inputs, describe);
  return withTransaction(deps.db, (tx) => triggerRunsInTransaction(deps, tx, env, inputs, describe));
}

/** Whether triggering `inputs` takes more than the INSERT's one statement (see triggerRuns). */
export function needsTransaction(inputs: TriggerInput[]): boolean {
  return (
    inputs.length > 1000 ||
    inputs.some((i) => i.options?.idempotencyKey !== undefined || i.options?.debounce !== undefined || i.options?.parentRunId !== undefined || i.lineage?.parentRunId !== undefined || i.options?.payloadType === "application/store")
  );
}
