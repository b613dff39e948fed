import { backoffDelayMs } from "../backoff.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "../engine/runs/retry-policy.ts";
import type { RunExecution } from "./run-context.ts";

/**
 * The delay after try `attempt` (1-based) failed, or undefined when it was the last
 * (Trigger.dev's calculateNextRetryDelay; unset settings take the task defaults).
 */
export function nextRetryDelay(options: RetryPolicy | undefined, attempt: number, random: () => number = Math.random): number | undefined {
  const p = { ...DEFAULT_RETRY };
  for (const key of Object.keys(p) as (keyof RetryPolicy)[]) {
    const value = options?.[key];
    if (value !== undefined && value !== null && !Number.isNaN(value)) (p as Record<keyof RetryPolicy, unknown>)[key] = value;
  }
  if (attempt >= p.maxAttempts) return undefined;
  return backoffDelayMs(attempt, p, DEFAULT_RETRY.maxTimeoutInMs, random);
}

/** Sleeps durably (a checkpoint, like wait.for): a replay does not sleep again. */
export async function sleepDurably(execution: RunExecution, ms: number): Promise<void> {
  await execution.waitUntil(null, `for:${ms}ms`, ms);
}

