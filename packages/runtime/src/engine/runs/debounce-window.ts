import { parseTtl } from "../../durations.ts";
import { ValidationError } from "../../errors.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";

// A trigger's `options.debounce`, checked when the run is planned (plan-run.ts) and read again when
// a trigger pushes the pending run (debounce.ts).

export type Debounce = NonNullable<TriggerOptions["debounce"]>;

/** The shortest debounce delay (Trigger.dev's minimum). */
export const MIN_DEBOUNCE_DELAY_MS = 1000;

/** `debounce.delay` and `maxDelay` in milliseconds; a ValidationError for bad values. */
export function debounceWindow(debounce: Debounce): { delayMs: number; maxDelayMs: number | null } {
  if (typeof debounce.key !== "string" || debounce.key.length === 0) throw new ValidationError("debounce.key: must be a non-empty string");
  const delayMs = parseTtl(debounce.delay, "debounce.delay");
  if (delayMs < MIN_DEBOUNCE_DELAY_MS) throw new ValidationError(`debounce.delay: "${debounce.delay}" is shorter than the minimum of 1s`);
  const maxDelayMs = debounce.maxDelay === undefined ? null : parseTtl(debounce.maxDelay, "debounce.maxDelay");
  return { delayMs, maxDelayMs };
}
