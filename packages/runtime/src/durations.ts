import { ValidationError } from "./errors.ts";

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * The longest duration accepted (1,000 years): any time it leads to is a date both JS and Postgres
 * hold. Beyond it `new Date(now + ms)` is an invalid date, which pg sends as text Postgres refuses
 * (and the next major version of pg refuses to send at all).
 */
export const MAX_DURATION_MS = 1000 * 365 * 86_400_000;

/**
 * The longest period a rate limit may have (7 days): the retention sweep drops a rate key's log
 * once its newest start is older than this (engine/retention/delete-rate-windows.ts).
 */
export const MAX_RATE_PERIOD_MS = 7 * 86_400_000;

/**
 * The earliest instant Postgres' timestamptz holds (4714-11-24 BC). JS dates reach further back;
 * the latest JS date (+275760-09-13) is earlier than Postgres' latest, so that end is JS's.
 */
export const EARLIEST_STORABLE_MS = Date.UTC(-4713, 10, 24);

/** The latest instant a JS Date holds (+275760-09-13). */
export const LATEST_DATE_MS = 8.64e15;

/** True when `date` is a valid date Postgres can store. */
export function isStorableDate(date: Date): boolean {
  const ms = date.getTime();
  return !Number.isNaN(ms) && ms >= EARLIEST_STORABLE_MS;
}

/** `date`, or a ValidationError naming `field` when it is not a date Postgres can store. */
export function storableDate(date: Date, field: string): Date {
  if (!isStorableDate(date)) throw new ValidationError(`${field}: the resulting date is outside the range that can be stored (4714 BC to 275760 AD)`);
  return date;
}

/**
 * False when `text` starts with an ISO 8601 calendar date that does not exist ("2024-02-30",
 * "2024-13-01"): JS rolls such a day over into the next month instead of refusing it.
 */
export function isRealCalendarDate(text: string): boolean {
  const match = /^\s*([+-]?\d{4,6})-(\d{2})-(\d{2})/.exec(text);
  if (!match) return true;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const lastDay = new Date(Date.UTC(2000, month, 0));
  lastDay.setUTCFullYear(year, month, 0);
  return day <= lastDay.getUTCDate();
}

/**
 * Parses "30s", "10m", "1h30m", "2d", "1w" into milliseconds; null when the text is not a duration.
 */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  if (!/^(\d+(ms|s|m|hr|h|d|w))+$/.test(trimmed)) return null;
  let total = 0;
  for (const match of trimmed.matchAll(/(\d+)(ms|s|m|hr|h|d|w)/g)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
  }
  return total;
}

/**
 * Resolves a duration string, an ISO date string, a Date or a number of seconds to an absolute time.
 * Throws a ValidationError naming `field` when the value is neither a duration nor a date.
 */
export function resolveTime(value: string | number | Date, now: Date, field: string): Date {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new ValidationError(`${field}: invalid date`);
    return storableDate(value, field);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) throw new ValidationError(`${field}: expected a non-negative number of seconds`);
    return new Date(now.getTime() + withinMaxDuration(value * 1000, field, `${value}s`));
  }
  const ms = parseDuration(value);
  if (ms !== null) return new Date(now.getTime() + withinMaxDuration(ms, field, value));
  if (/^\d{4}-\d{2}-\d{2}/.test(value.trim())) {
    if (!isRealCalendarDate(value)) throw new ValidationError(`${field}: "${value}" is not a date on the calendar`);
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return storableDate(date, field);
  }
  throw new ValidationError(
    `${field}: "${value}" is neither a duration (e.g. "30s", "10m", "1h30m", "2d") nor an ISO 8601 date`,
  );
}

/** Parses a TTL such as "1h" to milliseconds, throwing a ValidationError naming `field`. */
export function parseTtl(value: string, field: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new ValidationError(`${field}: "${value}" is not a duration (e.g. "30s", "10m", "1h", "7d")`);
  return withinMaxDuration(ms, field, value);
}

/** `ms`, or a ValidationError naming `field` when it is longer than MAX_DURATION_MS. */
export function withinMaxDuration(ms: number, field: string, shown: string): number {
  if (!(ms <= MAX_DURATION_MS)) throw new ValidationError(`${field}: "${shown}" is too long (at most ${MAX_DURATION_MS / 86_400_000}d)`);
  return ms;
}
