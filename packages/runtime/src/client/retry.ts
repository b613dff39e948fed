// Whether and when to retry a request: a pure decision, so it is tested with plain values.
import { backoffDelayMs } from "../backoff.ts";
import type { RetryOptions } from "./config.ts";

/** Request retries: a caller waits through them, so the cap is lower than a task's (60 s). */
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
  return { retry: true, delayMs: backoffDelayMs(attempt, policy, DEFAULT_RETRY.maxTimeoutInMs, random) };
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
