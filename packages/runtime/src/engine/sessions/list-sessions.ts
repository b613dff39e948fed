import type { ListSessionsFilterQuery, SessionStatus } from "../../contracts/sessions.ts";
import type { Queryable } from "../../db/queryable.ts";
import { ValidationError } from "../../errors.ts";
import { commaList, createdAtRange } from "../list-filters.ts";
import type { SessionRow } from "./store.ts";

const STATUSES: readonly SessionStatus[] = ["ACTIVE", "CLOSED", "EXPIRED"];

export interface SessionListFilter {
  types?: string[];
  /** Any-match. */
  tags?: string[];
  taskIdentifiers?: string[];
  externalId?: string;
  statuses?: SessionStatus[];
  createdFrom?: Date;
  createdTo?: Date;
}

/** Turns the query's filters into a SessionListFilter (pure; `now` anchors `period`). Bad values → ValidationError. */
export function parseSessionListFilter(query: ListSessionsFilterQuery, now: Date): SessionListFilter {
  const filter: SessionListFilter = {};
  const types = commaList(query["filter[type]"]);
  if (types.length > 0) filter.types = types;
  const tags = commaList(query["filter[tags]"]);
  if (tags.length > 0) filter.tags = tags;
  const tasks = commaList(query["filter[taskIdentifier]"]);
  if (tasks.length > 0) filter.taskIdentifiers = tasks;
  if (query["filter[externalId]"] !== undefined) filter.externalId = query["filter[externalId]"];
  const statuses = commaList(query["filter[status]"]);
  const bad = statuses.filter((s) => !STATUSES.includes(s as SessionStatus));
  if (bad.length > 0) throw new ValidationError(`filter[status]: "${bad.join(", ")}" is not one of ${STATUSES.join(", ")}`);
  if (statuses.length > 0) filter.statuses = statuses as SessionStatus[];
  return { ...filter, ...createdAtRange(query, now) };
}

/** The SQL condition of each derived status at `$now`. */
function statusCondition(status: SessionStatus, now: string): string {
  if (status === "CLOSED") return `closed_at IS NOT NULL`;
  if (status === "EXPIRED") return `(closed_at IS NULL AND expires_at <= ${now})`;
  return `(closed_at IS NULL AND (expires_at IS NULL OR expires_at > ${now}))`;
}

/**
 * One page of an environment's sessions in (created_at, id) order. `keyset` is the pagination
 * condition, written with `$1`/`$2`; its values come first.
 */
export async function listSessionRows(
  db: Queryable,
  environmentId: string,
  filter: SessionListFilter,
  now: Date,
  keyset: { sql: string; values: unknown[] } | null,
  direction: "desc" | "asc",
  limit: number,
): Promise<SessionRow[]> {
  const values: unknown[] = keyset ? [...keyset.values] : [];
  const where: string[] = keyset ? [keyset.sql] : [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  where.push(`environment_id = ${param(environmentId)}`);
  if (filter.types) where.push(`type = ANY(${param(filter.types)}::text[])`);
  if (filter.tags) where.push(`tags && ${param(filter.tags)}::text[]`);
  if (filter.taskIdentifiers) where.push(`task_identifier = ANY(${param(filter.taskIdentifiers)}::text[])`);
  if (filter.externalId !== undefined) where.push(`external_id = ${param(filter.externalId)}`);
  if (filter.statuses) {
    const at = filter.statuses.some((s) => s !== "CLOSED") ? `${param(now)}::timestamptz` : "";
    where.push(`(${filter.statuses.map((s) => statusCondition(s, at)).join(" OR ")})`);
  }
  if (filter.createdFrom) where.push(`created_at >= ${param(filter.createdFrom)}`);
  if (filter.createdTo) where.push(`created_at <= ${param(filter.createdTo)}`);
  const order = direction === "desc" ? "DESC" : "ASC";
  const { rows } = await db.query<SessionRow>(
    `SELECT * FROM sessions WHERE ${where.join(" AND ")} ORDER BY created_at ${order}, id ${order} LIMIT ${param(limit)}`,
    values,
  );
  return rows;
}
