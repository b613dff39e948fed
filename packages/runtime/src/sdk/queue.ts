import { rateLimitOf, type RateLimit } from "./rate-limit.ts";

const QUEUE_MARK = Symbol.for("svc.runtime.queue");

/** A queue declared with `queue()`: tasks name it (or pass it) as their `queue`. */
export interface Queue {
  name: string;
  /** At most this many runs of the queue execute at once, across all workers (per concurrencyKey). */
  concurrencyLimit?: number;
  /**
   * At most `limit` runs of the queue start in any window of `period`, across all workers (per
   * rate key: a trigger's `rateLimit: { key }`). A run over the rate stays QUEUED until its slot.
   */
  rateLimit?: RateLimit;
}

/**
 * Declares a queue several tasks can share (Trigger.dev's `queue()`). Export it from a task file:
 * the worker reads its limit from there for every task that names it, by the queue itself or by
 * its name.
 *
 * @example
 * export const emails = queue({ name: "emails", concurrencyLimit: 10 });
 * export const welcome = task({ id: "welcome-email", queue: emails, run: async () => {} });
 * export const digest = task({ id: "digest-email", queue: "emails", run: async () => {} });
 * // At most 10 starts in any second (per rate key, when triggers give one):
 * export const openai = queue({ name: "openai", rateLimit: { limit: 10, period: "1s" } });
 */
export function queue(options: Queue): Queue {
  if (!options || typeof options.name !== "string" || options.name.trim() === "") throw new Error("queue(): `name` is required");
  const limit = options.concurrencyLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) throw new Error(`queue("${options.name}"): \`concurrencyLimit\` must be a whole number ≥ 0`);
  if (options.rateLimit !== undefined) rateLimitOf(options.rateLimit, `queue("${options.name}")`);
  return Object.defineProperty({ ...options }, QUEUE_MARK, { value: true, enumerable: false });
}

/** Whether `value` was made by `queue()` (the worker's loader collects them). */
export function isQueue(value: unknown): value is Queue {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[QUEUE_MARK] === true;
}
