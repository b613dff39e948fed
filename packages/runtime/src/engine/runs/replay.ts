import { NotFoundError } from "../../errors.ts";
import type { ReplayRunBody } from "../../contracts/runs.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { replayInput } from "./replay-input.ts";
import { replayRunFromFailure } from "./replay-from-failure.ts";
import { getRun, type RunRow } from "./store.ts";
import { triggerRun, triggerRunInTransaction, type TriggerResult } from "./trigger.ts";
import type { Queryable } from "../../db/queryable.ts";

/**
 * Triggers a new run of the same task with the same payload (and payload type), queue, tags,
 * metadata, concurrency key, test flag and limits. Works from any status; the new run has no
 * parent and, unless `overrides` gives one, no idempotency key. `overrides` (the SDK's replay
 * options) replaces individual fields. `from: "failure"` is replay-from-failure.ts's.
 */
export async function replayRun(deps: EngineDeps, env: Environment, runId: string, overrides: ReplayRunBody = {}): Promise<TriggerResult> {
  if (overrides.from === "failure") return replayRunFromFailure(deps, env, runId, overrides);
  const run = await getRun(deps.db, runId, env.id);
  if (!run) throw new NotFoundError("Run not found");
  const { payload, options } = replayInput(run, overrides);
  return triggerRun(deps, env, run.task_identifier, payload, options);
}

/** A replay of `run` (already read) in the caller's transaction `tx`: a bulk action's chunk (bulk-actions/process-chunk.ts). */
export async function replayRunInTransaction(deps: Pick<EngineDeps, "clock" | "dispatcher">, tx: Queryable, env: Environment, run: RunRow, overrides: ReplayRunBody = {}): Promise<TriggerResult> {
  const { payload, options } = replayInput(run, overrides);
  return triggerRunInTransaction(deps, tx, env, run.task_identifier, payload, options);
}
