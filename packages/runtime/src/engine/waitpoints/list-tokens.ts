import type { ListWaitpointTokensFilterQuery } from "../../contracts/waitpoints.ts";
import type { Queryable } from "../../db/queryable.ts";
import { commaList, createdAtRange } from "../list-filters.ts";
import { ValidationError } from "../../errors.ts";
import { isWaitpointStatus, type WaitpointStatus } from "./statuses.ts";
import type { WaitpointRow } from "./store.ts";

export interface TokenListFilter {
  statuses?: WaitpointStatus[];
  idempotencyKey?: string;
  /** Any-match. */
  tags?: string[];
  createdFrom?: Date;
  createdTo?: Date;
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
  Object.assign(filter, createdAtRange(query, now));
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
