import { z } from "zod";
import { EARLIEST_STORABLE_MS, LATEST_DATE_MS, MAX_DURATION_MS } from "../durations.ts";

/**
 * The OpenAPI document's shapes for times the engine parses (durations.ts, list-filters.ts): what
 * they admit the server takes. The zod schemas stay plain strings and numbers, so the engine's
 * own messages ("ttl: … is not a duration") still answer whatever a client sends.
 */

/**
 * parseDuration's grammar, `(\d+(ms|s|m|hr|h|d|w))+`, written largest unit first with each unit
 * at most once (Trigger.dev's `parseNaturalLanguageDuration` order) and digits bounded so that no
 * duration it admits passes MAX_DURATION_MS: 9999w + 99999d + 999999h + 9999999m + 999999999s +
 * 999999999999ms is about 662 years. With minLength 2 it admits no empty string.
 */
export const DURATION_PATTERN = "^([0-9]{1,4}w)?([0-9]{1,5}d)?([0-9]{1,6}(hr|h))?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,12}ms)?$";

/** A duration as the document shows it (see DURATION_PATTERN). */
export const DURATION_SCHEMA = {
  pattern: DURATION_PATTERN,
  minLength: 2,
  description: 'A duration: whole numbers with units w, d, h (or hr), m, s, ms, largest first, e.g. "30s", "10m", "1h30m", "7d"',
};

/** Longest duration in whole seconds (MAX_DURATION_MS): the bound of a TTL given as a number. */
export const MAX_DURATION_WHOLE_SECONDS = MAX_DURATION_MS / 1000;

/**
 * An RFC 3339 date-time the engine reads with `new Date()`: every one but a leap second (JS has
 * none), which the pattern leaves out; the format checks the calendar (no February 30).
 */
export const DATE_TIME_SCHEMA = { type: "string", format: "date-time", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-5][0-9]" };

/** Epoch milliseconds the engine turns into a date Postgres stores (4714 BC to +275760). */
export const EPOCH_MS_SCHEMA = { minimum: EARLIEST_STORABLE_MS, maximum: LATEST_DATE_MS };

/** A duration or an RFC 3339 date-time, as text: `delay` and a token's `timeout`. */
export const DurationOrDateText = z.string().meta({
  anyOf: [{ type: "string", ...DURATION_SCHEMA }, DATE_TIME_SCHEMA],
  description: 'A duration ("30s", "10m", "1h30m", "2d", largest unit first) or an RFC 3339 date-time',
});

/** A duration as text (`ttl`, `idempotencyKeyTTL`). */
export const DurationText = z.string().meta(DURATION_SCHEMA);

/** `filter[createdAt][from|to]` in the document: epoch milliseconds as digits (at most 15: a date JS holds), or an RFC 3339 date-time. */
export const INSTANT_QUERY_SCHEMA = {
  anyOf: [{ type: "string", pattern: "^[0-9]{1,15}$" }, DATE_TIME_SCHEMA],
  description: "Epoch milliseconds (what the SDK sends for a Date) or an RFC 3339 date-time",
};

/** `a,b,c` of `values` only: a comma list filter such as `filter[status]`. */
export function commaListPattern(values: readonly string[]): string {
  const one = `(${values.join("|")})`;
  return `^${one}(,${one})*$`;
}
