const QUEUE_MARK = Symbol.for("svc.runtime.queue");

/** A queue declared with `queue()`: tasks name it (or pass it) as their `queue`. */
export interface Queue {
  name: string;
  /** At most this many runs of the queue execute at once, across all workers (per concurrencyKey). */
  concurrencyLimit?: number;
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
 */
export function queue(options: Queue): Queue {
  if (!options || typeof options.name !== "string" || options.name.trim() === "") throw new Error("queue(): `name` is required");
  const limit = options.concurrencyLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) throw new Error(`queue("${options.name}"): \`concurrencyLimit\` must be a whole number ≥ 0`);
  return Object.defineProperty({ ...options }, QUEUE_MARK, { value: true, enumerable: false });
}

/** Whether `value` was made by `queue()` (the worker's loader collects them). */
export function isQueue(value: unknown): value is Queue {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[QUEUE_MARK] === true;
}
