import type { ListWaitpointTokensFilterQuery } from "../../contracts/waitpoints.ts";
import type { Queryable } from "../../db/queryable.ts";
import { isRealCalendarDate, storableDate } from "../../durations.ts";
import { ValidationError } from "../../errors.ts";
import { isWaitpointStatus, type WaitpointStatus } from "./statuses.ts";
import type { WaitpointRow } from "./store.ts";

/** The only `period` values the management API accepts. */
export const TOKEN_LIST_PERIODS: Record<string, number> = {
  "1h": 3_600_000,
  "1d": 86_400_000,
  "7d": 7 * 86_400_000,
  "30d": 30 * 86_400_000,
};

export interface TokenListFilter {
  statuses?: WaitpointStatus[];
  idempotencyKey?: string;
  /** Any-match. */
  tags?: string[];
  createdFrom?: Date;
  createdTo?: Date;
}

function commaList(value: string | undefined): string[] {
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

/** Turns the query's filters into a TokenListFilter (pure; `now` anchors `period`). Bad values → ValidationError. */
export function parseTokenListFilter(query: ListWaitpointTokensFilterQuery, now: Date): TokenListFilter {
  const filter: TokenListFilter = {};
  const statuses = commaList(query["filter[status]"]);
  const bad = statuses.filter((s) => !isWaitpointStatus(s));
  if (bad.length > 0) throw new ValidationError(`filter[status]: "${bad.join(", ")}" is not one of WAITING, COMPLETED, TIMED_OUT`);
  if (statuses.length > 0) filter.statuses = statuses as WaitpointStatus[];
  if (query["filter[idempotencyKey]"]) filter.idempotencyKey = query["filter[idempotencyKey]"];
  const tags = commaList(query["filter[tags]"]);
  if (tags.length > 0) filter.tags = tags;
  const period = query["filter[createdAt][period]"];
  if (period !== undefined) {
    const ms = TOKEN_LIST_PERIODS[period.trim()];
    if (ms === undefined) throw new ValidationError(`filter[createdAt][period]: "${period}" is not one of ${Object.keys(TOKEN_LIST_PERIODS).join(", ")}`);
    filter.createdFrom = new Date(now.getTime() - ms);
  }
  const from = query["filter[createdAt][from]"];
  if (from !== undefined) {
    const at = parseInstant(from, "filter[createdAt][from]");
    // With both a period and a from, the later start wins (both conditions hold).
    if (!filter.createdFrom || at > filter.createdFrom) filter.createdFrom = at;
  }
  const to = query["filter[createdAt][to]"];
  if (to !== undefined) filter.createdTo = parseInstant(to, "filter[createdAt][to]");
  return filter;
}

/**
 * One page of an environment's tokens (MANUAL waitpoints only), in (created_at, id) order.
 * `keyset` is the pagination condition, written with `$1`/`$2`; its values come first.
 * No default time window: every token matches unless a filter says otherwise.
 */
export async function listTokenRows(
  db: Queryable,
  environmentId: string,
  filter: TokenListFilter,
  keyset: { sql: string; values: unknown[] } | null,
  direction: "desc" | "asc",
  limit: number,
): Promise<WaitpointRow[]> {
  const values: unknown[] = keyset ? [...keyset.values] : [];
  const where: string[] = keyset ? [keyset.sql] : [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  where.push(`environment_id = ${param(environmentId)}`, `type = 'MANUAL'`);
  if (filter.statuses) where.push(`status = ANY(${param(filter.statuses)}::text[])`);
  if (filter.idempotencyKey !== undefined) {
    const key = param(filter.idempotencyKey);
    where.push(`idempotency_key_user_provided AND (idempotency_key = ${key} OR inactive_idempotency_key = ${key})`);
  }
  // `tags <> '{}'` lets the planner use the partial GIN index (only tagged waitpoints are in it).
  if (filter.tags) where.push(`tags <> '{}' AND tags && ${param(filter.tags)}::text[]`);
  if (filter.createdFrom) where.push(`created_at >= ${param(filter.createdFrom)}`);
  if (filter.createdTo) where.push(`created_at <= ${param(filter.createdTo)}`);
  const order = direction === "desc" ? "DESC" : "ASC";
  const { rows } = await db.query<WaitpointRow>(
    `SELECT * FROM waitpoints WHERE ${where.join(" AND ")} ORDER BY created_at ${order}, id ${order} LIMIT ${param(limit)}`,
    values,
  );
  return rows;
}
