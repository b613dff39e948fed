import { MAX_GATES } from "../../contracts/trigger.ts";
import { unstorableReason } from "../../contracts/text.ts";
import { ValidationError } from "../../errors.ts";

/**
 * A gate of a run (a trigger's `gates` option, migration 0049): another queue the run must also
 * fit in while it executes, in that queue's pool of `concurrencyKey` (none: its runs without a key).
 */
export interface Gate {
  queue: string;
  concurrencyKey?: string;
}

/** What svc_trigger_run answers too, word for word (test/trigger-in-sql.test.ts). */
export const GATES_MESSAGE = `options.gates: must be a list of at most ${MAX_GATES} gates, each { "queue": …, "concurrencyKey"?: … } of 1 to 128 characters`;

const GATE_KEYS = new Set(["queue", "concurrencyKey"]);

const isName = (value: unknown): value is string => typeof value === "string" && value.length >= 1 && value.length <= 128 && unstorableReason(value) === null;

/**
 * The gates a trigger's `gates` option names, distinct (the first of two alike kept, in the order
 * given), as svc_trigger_run stores them; null: none (absent or an empty list).
 * Checked here as well as by the route's schema (a trigger from task code has no schema), with
 * svc_trigger_run's message. A JSON null concurrencyKey counts as absent.
 */
export function gatesOf(option: unknown): Gate[] | null {
  if (option === undefined || option === null) return null;
  if (!Array.isArray(option) || option.length > MAX_GATES) throw new ValidationError(GATES_MESSAGE);
  const byPool = new Map<string, Gate>();
  for (const item of option as unknown[]) {
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new ValidationError(GATES_MESSAGE);
    const { queue, concurrencyKey } = item as Record<string, unknown>;
    if (Object.keys(item).some((k) => !GATE_KEYS.has(k)) || !isName(queue) || !(concurrencyKey === undefined || concurrencyKey === null || isName(concurrencyKey))) {
      throw new ValidationError(GATES_MESSAGE);
    }
    const gate: Gate = typeof concurrencyKey === "string" ? { queue, concurrencyKey } : { queue };
    const pool = JSON.stringify([queue, gate.concurrencyKey ?? null]);
    if (!byPool.has(pool)) byPool.set(pool, gate);
  }
  return byPool.size === 0 ? null : [...byPool.values()];
}
