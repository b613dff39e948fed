import type { ReplayRunBody } from "../../contracts/runs.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { RunRow } from "./store.ts";

/** The payload and trigger options of a replay of `run`: its own fields, with `overrides` replacing individual ones. */
export function replayInput(run: RunRow, overrides: ReplayRunBody): { payload: unknown; options: TriggerOptions } {
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
  // A replay keeps its run's rate key and own bound: it is rate-limited as the run was.
  if (run.rate_limit_key != null || run.rate_limit != null) {
    options.rateLimit = {
      ...(run.rate_limit_key != null ? { key: run.rate_limit_key } : {}),
      ...(run.rate_limit != null && run.rate_period_ms != null ? { limit: run.rate_limit, period: run.rate_period_ms } : {}),
    };
  }
  // And the named concurrency limits it held (its task's inline limit, task/<id>, is not a name a
  // trigger may give: the replay holds it again from the task's declaration).
  const named = run.concurrency_limits?.filter((name) => !name.includes("/")) ?? [];
  if (named.length > 0) options.concurrency = named;
  // And its gates.
  if (run.gates) options.gates = run.gates;
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
  return { payload, options };
}
