/**
 * The one exponential backoff of svc: used for task retries (engine/runs/retry-policy.ts, default
 * cap 60 s) and for the management client's request retries (client/retry.ts, default cap 30 s: a
 * caller waits through those). Each caller keeps its own documented defaults; the formula is here.
 */
export interface BackoffPolicy {
  minTimeoutInMs: number;
  factor: number;
  maxTimeoutInMs: number;
  /** Spread each delay randomly between 1x and 2x. */
  randomize: boolean;
}

/** The longest backoff: far beyond any real policy, and always a date both JS and Postgres hold. */
export const MAX_BACKOFF_MS = 365 * 86_400_000;

/**
 * The delay after attempt `attempt` (1-based): min(maxTimeout, minTimeout × factor^(attempt−1)),
 * times a factor in [1, 2) when randomized, in whole ms, never negative nor beyond MAX_BACKOFF_MS.
 * Settings that make it not a number (∞ × 0) give `fallbackMs` instead: a NaN delay would be an
 * invalid date (a run queued for good) or an immediate retry. Pure: `random` is injected.
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy, fallbackMs: number, random: () => number = Math.random): number {
  const base = policy.minTimeoutInMs * Math.pow(policy.factor, Math.max(0, attempt - 1));
  const jittered = policy.randomize ? base * (1 + random()) : base;
  const capped = Math.min(policy.maxTimeoutInMs, jittered, MAX_BACKOFF_MS);
  return Number.isNaN(capped) ? fallbackMs : Math.max(0, Math.round(capped));
}
