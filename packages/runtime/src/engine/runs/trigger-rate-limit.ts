import { ValidationError } from "../../errors.ts";
import { isRateLimit, MAX_RATE_LIMIT, ratePeriodMsOf } from "../../sdk/rate-limit.ts";

/** A trigger's `rateLimit` option as the HTTP schema lets it through (other keys are refused here, with their names). */
export type RateLimitOption = { key?: string | number; limit?: number; period?: string | number } & Record<string, unknown>;

/** What a run keeps of its trigger's `rateLimit`: its rate key, and its own bound (null: none). */
export interface RunRate {
  key: string | null;
  own: { limit: number; periodMs: number } | null;
}

/**
 * A trigger's `rateLimit: { key?, limit?, period? }` (docs/rate-limits.md): `key` names whose
 * quota the run spends (its copy of its queue's rate), and `limit` with `period` give the run its
 * own bound besides the queue's: it starts only while its key's starts in the last `period`
 * number fewer than `limit`. The same checks and messages as svc_trigger_run's.
 */
export function runRateOf(option: RateLimitOption | undefined): RunRate {
  if (option === undefined) return { key: null, own: null };
  const other = Object.keys(option).filter((k) => k !== "key" && k !== "limit" && k !== "period");
  if (other.length > 0) {
    throw new ValidationError(`options.rateLimit: takes key, limit and period (got ${other.map((k) => `\`${k}\``).join(", ")})`);
  }
  const key = option.key === undefined ? null : String(option.key);
  const { limit, period } = option;
  if (limit === undefined && period === undefined) return { key, own: null };
  if (limit === undefined || period === undefined) {
    throw new ValidationError("options.rateLimit: limit and period go together (the run starts only while its key's starts in the last `period` number fewer than `limit`)");
  }
  if (!isRateLimit(limit)) {
    throw new ValidationError(`options.rateLimit.limit: must be a whole number from 1 to ${MAX_RATE_LIMIT.toLocaleString("en")}`);
  }
  const periodMs = ratePeriodMsOf(period);
  if (periodMs === null) {
    throw new ValidationError('options.rateLimit.period: must be a duration ("1s", "10m", "1h") or whole milliseconds, from 1 ms to 7 days');
  }
  return { key, own: { limit, periodMs } };
}
