import { isRealCalendarDate, storableDate } from "../durations.ts";
import { ValidationError } from "../errors.ts";

/** The only `period` values the management API accepts for list filters. */
export const LIST_PERIODS: Record<string, number> = {
  "1h": 3_600_000,
  "1d": 86_400_000,
  "7d": 7 * 86_400_000,
  "30d": 30 * 86_400_000,
};

/** A comma-joined filter value (what the SDK sends for an array), trimmed, without blanks. */
export function commaList(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

/** `from`/`to`: epoch milliseconds (what the SDK sends for a Date) or an ISO 8601 date. */
function parseInstant(value: string, param: string): Date {
  const trimmed = value.trim();
  const date = /^\d+$/.test(trimmed) ? new Date(Number(trimmed)) : /^\d{4}-\d{2}-\d{2}/.test(trimmed) ? new Date(trimmed) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime()) || !isRealCalendarDate(trimmed)) throw new ValidationError(`${param}: "${value}" is neither epoch milliseconds nor an ISO 8601 date`);
  storableDate(date, param);
  return date;
}

export interface CreatedAtQuery {
  "filter[createdAt][period]"?: string;
  "filter[createdAt][from]"?: string;
  "filter[createdAt][to]"?: string;
}

/** The creation-time range of `filter[createdAt][period|from|to]` (pure; `now` anchors `period`). */
export function createdAtRange(query: CreatedAtQuery, now: Date): { createdFrom?: Date; createdTo?: Date } {
  const range: { createdFrom?: Date; createdTo?: Date } = {};
  const period = query["filter[createdAt][period]"];
  if (period !== undefined) {
    const ms = LIST_PERIODS[period.trim()];
    if (ms === undefined) throw new ValidationError(`filter[createdAt][period]: "${period}" is not one of ${Object.keys(LIST_PERIODS).join(", ")}`);
    range.createdFrom = new Date(now.getTime() - ms);
  }
  const from = query["filter[createdAt][from]"];
  if (from !== undefined) {
    const at = parseInstant(from, "filter[createdAt][from]");
    // With both a period and a from, the later start wins (both conditions hold).
    if (!range.createdFrom || at > range.createdFrom) range.createdFrom = at;
  }
  const to = query["filter[createdAt][to]"];
  if (to !== undefined) range.createdTo = parseInstant(to, "filter[createdAt][to]");
  return range;
}
