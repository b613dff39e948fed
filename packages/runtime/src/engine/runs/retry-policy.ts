/** A task's retry settings (Trigger.dev's names and defaults). */
export interface RetryPolicy {
  /** @default 3 */
  maxAttempts?: number;
  /** @default 2 */
  factor?: number;
  /** @default 1000 */
  minTimeoutInMs?: number;
  /** @default 60000 */
  maxTimeoutInMs?: number;
  /** @default true */
  randomize?: boolean;
}

export const DEFAULT_RETRY: Required<RetryPolicy> = {
  maxAttempts: 3,
  factor: 2,
  minTimeoutInMs: 1000,
  maxTimeoutInMs: 60_000,
  randomize: true,
};

export type FailureDecision = { kind: "retry"; at: Date; delayMs: number } | { kind: "fail" };

/**
 * What to do after attempt `attempt` (1-based) failed. Pure: `random` is injected.
 * Delay = min(maxTimeout, minTimeout * factor^(attempt-1)), times a factor in [1, 2) when randomized.
 */
export function decideAfterFailure(
  attempt: number,
  policy: RetryPolicy | undefined,
  maxAttemptsOverride: number | null | undefined,
  now: Date,
  random: () => number = Math.random,
  retryable = true,
): FailureDecision {
  const p = { ...DEFAULT_RETRY, ...policy };
  const maxAttempts = maxAttemptsOverride ?? p.maxAttempts;
  if (!retryable || attempt >= maxAttempts) return { kind: "fail" };
  const base = p.minTimeoutInMs * Math.pow(p.factor, attempt - 1);
  const jittered = p.randomize ? base * (1 + random()) : base;
  const delayMs = Math.round(Math.min(p.maxTimeoutInMs, jittered));
  return { kind: "retry", at: new Date(now.getTime() + delayMs), delayMs };
}
