import { NotFoundError } from "../../errors.ts";
import type { ReplayRunBody } from "../../contracts/runs.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { getRun } from "./store.ts";
import { triggerRun, type TriggerResult } from "./trigger.ts";

/**
 * Triggers a new run of the same task with the same payload (and payload type), queue, tags,
 * metadata, concurrency key, test flag and limits. Works from any status; the new run has no
 * parent and, unless `overrides` gives one, no idempotency key. `overrides` (the SDK's replay
 * options) replaces individual fields.
 */
export async function replayRun(deps: EngineDeps, env: Environment, runId: string, overrides: ReplayRunBody = {}): Promise<TriggerResult> {
  const run = await getRun(deps.db, runId, env.id);
  if (!run) throw new NotFoundError("Run not found");
  const options: TriggerOptions = {
    payloadType: run.payload === null ? "application/json" : run.payload_type,
    queue: { name: overrides.queue ?? run.queue_name },
    tags: overrides.tags ?? run.tags,
    test: run.is_test,
  };
  const metadata = overrides.metadata ?? run.metadata;
  if (metadata !== null && metadata !== undefined) options.metadata = metadata;
  const concurrencyKey = overrides.concurrencyKey ?? run.concurrency_key;
  if (concurrencyKey !== null) options.concurrencyKey = concurrencyKey;
  const maxAttempts = overrides.maxAttempts ?? run.max_attempts;
  if (maxAttempts !== null) options.maxAttempts = maxAttempts;
  const maxDuration = overrides.maxDuration ?? run.max_duration_s;
  if (maxDuration !== null) options.maxDuration = maxDuration;
  for (const key of ["delay", "ttl", "idempotencyKey", "idempotencyKeyTTL"] as const) {
    if (overrides[key] !== undefined) (options as Record<string, unknown>)[key] = overrides[key];
  }
  let payload: unknown = run.payload ?? undefined;
  if (overrides.payload !== undefined) {
    payload = overrides.payload;
    options.payloadType = overrides.payloadType ?? "application/json";
  }
  return triggerRun(deps, env, run.task_identifier, payload, options);
}
