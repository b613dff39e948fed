// Whether and when to retry a request: a pure decision, so it is tested with plain values.
import type { RetryOptions } from "./config.ts";

export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 3,
  minTimeoutInMs: 1000,
  maxTimeoutInMs: 30_000,
  factor: 2,
  randomize: true,
};

/** What happened on one attempt. */
export type AttemptOutcome =
  | { kind: "response"; status: number; headers: Headers }
  | { kind: "connectionError" };

export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/** 408, 429 and every 5xx are worth another try; other statuses are the caller's fault or final. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Decides after attempt number `attempt` (1-based). The server's `x-should-retry: true|false`
 * overrides the status rule; a 429 waits for `retry-after` (seconds) or `x-ratelimit-reset`
 * (epoch ms) when given. `random` is injectable for tests (returns [0, 1)).
 */
export function decideRetry(
  attempt: number,
  outcome: AttemptOutcome,
  options: RetryOptions = {},
  now: number = Date.now(),
  random: () => number = Math.random,
): RetryDecision {
  const policy = { ...DEFAULT_RETRY, ...definedOnly(options) };
  if (attempt >= policy.maxAttempts) return { retry: false };
  if (outcome.kind === "response") {
    const shouldRetry = outcome.headers.get("x-should-retry");
    const wanted = shouldRetry === "true" ? true : shouldRetry === "false" ? false : isRetryableStatus(outcome.status);
    if (!wanted) return { retry: false };
    if (outcome.status === 429) {
      const wait = rateLimitWait(outcome.headers, now);
      if (wait !== undefined) return { retry: true, delayMs: Math.min(wait, policy.maxTimeoutInMs) };
    }
  }
  return { retry: true, delayMs: backoffDelay(attempt, policy, random) };
}

/** Exponential backoff for the retry after attempt `attempt`: min × factor^(attempt−1), capped. */
export function backoffDelay(attempt: number, policy: Required<RetryOptions>, random: () => number = Math.random): number {
  const jitter = policy.randomize ? 1 + random() : 1;
  const raw = policy.minTimeoutInMs * Math.pow(policy.factor, Math.max(0, attempt - 1)) * jitter;
  return Math.round(Math.min(raw, policy.maxTimeoutInMs));
}

function rateLimitWait(headers: Headers, now: number): number | undefined {
  const retryAfter = headers.get("retry-after");
  if (retryAfter !== null) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  const reset = headers.get("x-ratelimit-reset");
  if (reset !== null) {
    const epochMs = Number(reset);
    if (Number.isFinite(epochMs)) return Math.max(0, epochMs - now);
  }
  return undefined;
}

function definedOnly(options: RetryOptions): RetryOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as RetryOptions;
}
