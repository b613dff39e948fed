import { backoffDelayMs, MAX_BACKOFF_MS } from "../../backoff.ts";

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

/** The longest backoff: far beyond any real policy, and always a date both JS and Postgres hold. */
export const MAX_RETRY_DELAY_MS = MAX_BACKOFF_MS;

export type FailureDecision = { kind: "retry"; at: Date; delayMs: number } | { kind: "fail" };

/**
 * What to do after attempt `attempt` (1-based) failed. Pure: `random` is injected.
 * Delay: backoffDelayMs: minTimeout * factor^(attempt-1), times [1, 2) when randomized, then capped at maxTimeout (as Trigger.dev does).
 */
export function decideAfterFailure(
  attempt: number,
  policy: RetryPolicy | undefined,
  maxAttemptsOverride: number | null | undefined,
  now: Date,
  random: () => number = Math.random,
  retryable = true,
): FailureDecision {
  const p = withDefaults(policy);
  if (!retryable || attempt >= maxAttemptsOf(policy, maxAttemptsOverride)) return { kind: "fail" };
  const delayMs = backoffDelayMs(attempt, p, DEFAULT_RETRY.maxTimeoutInMs, random);
  return { kind: "retry", at: new Date(now.getTime() + delayMs), delayMs };
}

/** How many attempts a run has: the run's own maxAttempts (a trigger option), else its task's, else 3. */
export function maxAttemptsOf(policy: RetryPolicy | undefined, maxAttemptsOverride: number | null | undefined): number {
  return maxAttemptsOverride ?? withDefaults(policy).maxAttempts;
}

/**
 * The policy with a default for every setting left out. `{ ...DEFAULT_RETRY, ...policy }` is not
 * enough: `{ minTimeoutInMs: undefined }` (an option passed through unset) would override the
 * default with undefined, making the delay NaN or the attempts unbounded. NaN is left out likewise.
 */
function withDefaults(policy: RetryPolicy | undefined): Required<RetryPolicy> {
  const p = { ...DEFAULT_RETRY };
  for (const key of Object.keys(p) as (keyof RetryPolicy)[]) {
    const value = policy?.[key];
    // NaN is never meant: as maxAttempts it would retry for ever, as a timeout make the delay NaN.
    if (value !== undefined && value !== null && !Number.isNaN(value)) (p as Record<keyof RetryPolicy, unknown>)[key] = value;
  }
  return p;
}
