import type { ListWaitpointTokensFilterQuery } from "../../contracts/waitpoints.ts";
import type { Queryable } from "../../db/queryable.ts";
import { commaList, createdAtRange } from "../list-filters.ts";
import { ValidationError } from "../../errors.ts";
import { isWaitpointStatus, WAITPOINT_STATUSES, type WaitpointStatus } from "./statuses.ts";
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

/** A list item's row: every column but `output`, which a list never shows and which may be large. */
export type TokenListRow = Omit<WaitpointRow, "output">;
const LIST_COLUMNS = `id, environment_id, type, status, idempotency_key, idempotency_key_user_provided, idempotency_key_expires_at,
  inactive_idempotency_key, timeout_at, completed_at, output_type, output_is_error, tags, completed_by_run_id, completed_by_batch_id, created_at`;

/**
 * One page of an environment's tokens (MANUAL waitpoints only), in (created_at, id) order.
 * `keyset` is the pagination condition, written with `$1`/`$2`; its values come first.
 * No default time window: every token matches unless a filter says otherwise.
 *
 * Each shape reads an index in the list's order, so a page costs about its own rows however long
 * the history (migration 0030):
 * - no status filter, or all three: `waitpoints_list` (environment, created_at, id);
 * - one status: WAITING and TIMED_OUT read `waitpoints_list_status` (environment, status,
 *   created_at, id; only those two statuses: completing a token adds nothing to it); COMPLETED, by
 *   far the commonest, walks `waitpoints_list` and skips the others;
 * - several statuses: one ordered branch per status (each as above, each at most `limit` rows),
 *   merged in order: an index can serve one status's rows in created order, not several mixed;
 * - an idempotency key: the few tokens that hold it or held it (`waitpoints_idempotency`,
 *   `waitpoints_inactive_idempotency`), then sorted, whatever else is asked.
 */
export async function listTokenRows(
  db: Queryable,
  environmentId: string,
  filter: TokenListFilter,
  keyset: { sql: string; values: unknown[] } | null,
  direction: "desc" | "asc",
  limit: number,
): Promise<TokenListRow[]> {
  const values: unknown[] = keyset ? [...keyset.values] : [];
  const where: string[] = keyset ? [keyset.sql] : [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  where.push(`environment_id = ${param(environmentId)}`, `type = 'MANUAL'`);
  if (filter.idempotencyKey !== undefined) {
    const key = param(filter.idempotencyKey);
    where.push(`idempotency_key_user_provided AND (idempotency_key = ${key} OR inactive_idempotency_key = ${key})`);
  }
  // `tags <> '{}'` lets the planner use the partial GIN index (only tagged waitpoints are in it).
  if (filter.tags) where.push(`tags <> '{}' AND tags && ${param(filter.tags)}::text[]`);
  if (filter.createdFrom) where.push(`created_at >= ${param(filter.createdFrom)}`);
  if (filter.createdTo) where.push(`created_at <= ${param(filter.createdTo)}`);
  const order = direction === "desc" ? "DESC" : "ASC";
  const tail = `ORDER BY created_at ${order}, id ${order} LIMIT ${param(limit)}`;
  const statuses = statusesToFilter(filter.statuses);
  let text: string;
  if (statuses.length === 0) {
    text = `SELECT ${LIST_COLUMNS} FROM waitpoints WHERE ${where.join(" AND ")} ${tail}`;
  } else if (statuses.length === 1) {
    text = `SELECT ${LIST_COLUMNS} FROM waitpoints WHERE ${where.join(" AND ")} AND status = ${param(statuses[0])} ${tail}`;
  } else if (filter.idempotencyKey !== undefined) {
    text = `SELECT ${LIST_COLUMNS} FROM waitpoints WHERE ${where.join(" AND ")} AND status = ANY(${param(statuses)}::text[]) ${tail}`;
  } else {
    const branches = statuses.map((status) => `(SELECT ${LIST_COLUMNS} FROM waitpoints WHERE ${where.join(" AND ")} AND status = ${param(status)} ${tail})`);
    text = `SELECT * FROM (${branches.join(" UNION ALL ")}) w ${tail}`;
  }
  const { rows } = await db.query<TokenListRow>(text, values);
  return rows;
}

/** The statuses to filter by, without repeats; none when the filter asks for every status (or none). */
function statusesToFilter(statuses: WaitpointStatus[] | undefined): WaitpointStatus[] {
  const wanted = WAITPOINT_STATUSES.filter((s) => statuses?.includes(s));
  return wanted.length === WAITPOINT_STATUSES.length ? [] : wanted;
}
