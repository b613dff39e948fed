import { MAX_RATE_PERIOD_MS, parseDuration } from "../durations.ts";

/**
 * A queue's rate limit: at most `limit` runs start in any window of `period`, across all workers,
 * per rate key (a trigger's `rateLimit: { key }`; runs without one share one copy). A run over the
 * rate stays QUEUED until its slot. Only starts count (a first attempt or a retry), not resumes
 * after a wait. docs/rate-limits.md.
 */
export interface RateLimit {
  /** How many runs may start in any window of `period` (a whole number, 1 to 1,000,000). */
  limit: number;
  /** The window: a duration ("1s", "10m", "1h") or milliseconds; 1 ms to 7 days. */
  period: string | number;
}

/** The largest `limit` (worker_tasks.rate_limit is an integer; a claim takes at most 100 runs anyway). */
export const MAX_RATE_LIMIT = 1_000_000;
export { MAX_RATE_PERIOD_MS };

/**
 * The rate limit `value` declares, in milliseconds; throws an Error naming `where` when it is not
 * one. `key` is refused with the reason: the key is each run's, given when it is triggered.
 */
export function rateLimitOf(value: unknown, where: string): { limit: number; periodMs: number } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${where}: \`rateLimit\` must be { limit, period }`);
  const { limit, period, ...rest } = value as Record<string, unknown>;
  if ("key" in rest) {
    throw new Error(`${where}: \`rateLimit.key\` is given when a run is triggered (options.rateLimit: { key }), not where the limit is declared`);
  }
  const other = Object.keys(rest);
  if (other.length > 0) throw new Error(`${where}: \`rateLimit\` takes only limit and period (got ${other.join(", ")})`);
  if (!isRateLimit(limit)) {
    throw new Error(`${where}: \`rateLimit.limit\` must be a whole number from 1 to ${MAX_RATE_LIMIT.toLocaleString("en")}`);
  }
  const periodMs = ratePeriodMsOf(period);
  if (periodMs === null) {
    throw new Error(`${where}: \`rateLimit.period\` must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days`);
  }
  return { limit, periodMs };
}

/** Whether `value` is a rate limit's `limit`: a whole number from 1 to MAX_RATE_LIMIT. */
export function isRateLimit(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_RATE_LIMIT;
}

/** A rate limit's `period` (a duration or whole milliseconds) in milliseconds, 1 ms to 7 days; null when it is not one. */
export function ratePeriodMsOf(period: unknown): number | null {
  const ms = typeof period === "number" ? period : typeof period === "string" ? parseDuration(period) : null;
  return ms !== null && Number.isInteger(ms) && ms >= 1 && ms <= MAX_RATE_PERIOD_MS ? ms : null;
}
