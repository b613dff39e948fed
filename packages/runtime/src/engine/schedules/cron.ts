import { CronExpressionParser, type CronExpression } from "cron-parser";
import cronstrue from "cronstrue";
import { UnprocessableError } from "../../errors.ts";

/**
 * Cron expressions and the ticks they produce. Pure functions, no IO: `now` is always passed in.
 * Ticks are computed by cron-parser in the schedule's IANA timezone, so daylight-saving changes
 * behave as cron-parser defines them (see planFire and the README's "Daylight saving time").
 */

export const DEFAULT_TIMEZONE = "UTC";
/** How many future ticks a scheduled run's payload lists in `upcoming`. */
export const UPCOMING_TICKS = 10;
export const MAX_CRON_LENGTH = 256;

const FIELD_NAMES = "minute hour day-of-month month day-of-week";
/** Catch-up scans forward from a bit before cron-parser's prev() answer (DST can skew it by up to 2 h). */
const CATCH_UP_LOOKBACK_MS = 3 * 3_600_000;
const MAX_SCAN = 10_000;

/**
 * Validates a 5-field cron expression and returns it normalised (trimmed, single spaces).
 * Throws UnprocessableError (422) naming the problem; a 6th (seconds) field is refused.
 */
export function parseCron(expression: string): string {
  const fields = expression.trim().split(/\s+/).filter((f) => f.length > 0);
  if (fields.length === 0) throw new UnprocessableError("Invalid cron expression: the expression is empty");
  if (fields.length === 6) throw new UnprocessableError("Invalid cron expression: CRON expressions with seconds are not allowed");
  if (fields.length !== 5) {
    throw new UnprocessableError(
      `Invalid cron expression "${clip(expression)}": expected 5 fields (${FIELD_NAMES}), got ${fields.length}`,
    );
  }
  const normalized = fields.join(" ");
  if (normalized.length > MAX_CRON_LENGTH) throw new UnprocessableError(`Invalid cron expression: longer than ${MAX_CRON_LENGTH} characters`);
  try {
    // next() also catches expressions that parse but never match (e.g. "0 0 31 2 *").
    CronExpressionParser.parse(normalized, { tz: DEFAULT_TIMEZONE, currentDate: new Date(0), strict: false }).next();
  } catch (error) {
    throw new UnprocessableError(`Invalid cron expression "${clip(normalized)}": ${(error as Error).message}`);
  }
  return normalized;
}

/**
 * Validates an IANA timezone name (default UTC) and returns its canonical spelling
 * ("europe/berlin" → "Europe/Berlin"). Offsets such as "+05:00" are refused.
 */
export function parseTimezone(timezone: string | undefined | null): string {
  if (timezone === undefined || timezone === null) return DEFAULT_TIMEZONE;
  const invalid = () =>
    new UnprocessableError(`Invalid IANA timezone: '${clip(timezone)}'. View the list of valid timezones at /api/v1/timezones`);
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(timezone)) throw invalid();
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    throw invalid();
  }
  const name = resolved.toLowerCase() === timezone.toLowerCase() ? resolved : timezone;
  try {
    CronExpressionParser.parse("0 0 * * *", { tz: name, currentDate: new Date(0) }).next();
  } catch {
    throw invalid();
  }
  return name;
}

/** Every timezone name svc accepts, for GET /api/v1/timezones ("UTC" first unless excluded). */
export function listTimezones(options: { excludeUtc?: boolean } = {}): string[] {
  const zones = Intl.supportedValuesOf("timeZone").filter((z) => z !== DEFAULT_TIMEZONE);
  return options.excludeUtc ? zones : [DEFAULT_TIMEZONE, ...zones];
}

/** English description of a cron expression, e.g. "At 02:30 AM" (cronstrue). */
export function describeCron(expression: string): string {
  try {
    return cronstrue.toString(expression, { throwExceptionOnParseError: true });
  } catch {
    return expression;
  }
}

function iterate(expression: string, timezone: string, after: Date): CronExpression {
  return CronExpressionParser.parse(expression, { tz: timezone, currentDate: after });
}

/** The first tick strictly after `after`. */
export function nextTick(expression: string, timezone: string, after: Date): Date {
  return iterate(expression, timezone, after).next().toDate();
}

/** The next `count` ticks strictly after `after`. */
export function upcomingTicks(expression: string, timezone: string, after: Date, count = UPCOMING_TICKS): Date[] {
  const it = iterate(expression, timezone, after);
  return Array.from({ length: count }, () => it.next().toDate());
}

export interface FirePlan {
  /** The tick to fire now: the latest tick at or before `now`, never earlier than `dueAt`. Null if none is due. */
  tick: Date | null;
  /** The schedule's next tick, strictly after `now` (or `dueAt` when nothing is due yet). */
  next: Date;
}

/**
 * Decides which tick a due schedule fires and where it goes next. `dueAt` is the schedule's
 * stored next tick, itself produced by cron-parser's next().
 *
 * Missed ticks are not replayed: when several ticks passed since `dueAt` (nothing was running),
 * only the latest one fires and the schedule moves to the first tick after `now`.
 *
 * Ticks come from chaining cron-parser's next() from the previous tick. That chain is what makes
 * daylight-saving days behave: the repeated hour of a fall-back day fires once (next() from the
 * first 02:30 skips the second), and a time skipped by spring-forward fires once, at the instant
 * it would have had before the change (02:30 CET = 01:30 UTC, shown as 03:30 CEST). Scanning
 * from an arbitrary instant instead can miss or repeat those ticks, so the chain is only left
 * after a gap of hours, where cron-parser's prev() says roughly where to resume.
 */
export function planFire(expression: string, timezone: string, dueAt: Date, now: Date): FirePlan {
  if (dueAt.getTime() > now.getTime()) return { tick: null, next: dueAt };
  let start = dueAt.getTime();
  try {
    const approx = iterate(expression, timezone, new Date(now.getTime() + 1)).prev().getTime();
    if (approx - CATCH_UP_LOOKBACK_MS > start) start = approx - CATCH_UP_LOOKBACK_MS;
  } catch {
    // No earlier tick known to cron-parser: chain from dueAt.
  }
  const it = iterate(expression, timezone, new Date(start));
  let tick = dueAt;
  for (let i = 0; i < MAX_SCAN; i++) {
    const candidate = it.next().toDate();
    if (candidate.getTime() > now.getTime()) return { tick, next: candidate };
    tick = candidate;
  }
  // Unreachable for real expressions (3 h of minutely ticks is 180); stay safe anyway.
  return { tick, next: nextTick(expression, timezone, now) };
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
