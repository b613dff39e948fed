import type { Queryable } from "../../db/queryable.ts";
import { ValidationError } from "../../errors.ts";
import type { RunStatus } from "./statuses.ts";
import type { RunRow } from "./store.ts";

/** A run row plus the slug of its environment (list items carry `env: {id, name}`). */
export type RunListRow = RunRow & { environment_slug: string };

/** Filters the run list query applies; every field is optional and they combine with AND. */
export interface RunListFilters {
  statuses?: RunStatus[];
  taskIdentifiers?: string[];
  versions?: string[];
  /** Any-match: a run with at least one of these tags. */
  tags?: string[];
  batchIds?: string[];
  scheduleIds?: string[];
  queues?: string[];
  isTest?: boolean;
  /** Runs a session started (session ids). */
  sessionIds?: string[];
  createdFrom?: Date;
  createdTo?: Date;
}

/** One page request in (created_at DESC, id DESC) order, as the API's keyset paginator asks for it. */
export interface RunListPage {
  /** An extra condition on `created_at`/`id` with its own `$1`, `$2` … placeholders, or null. */
  keyset: { sql: string; values: unknown[] } | null;
  direction: "desc" | "asc";
  limit: number;
}

/**
 * Lists runs of the given environments matching `filters`, one keyset page at a time. Used by
 * `GET /api/v1/runs` (one environment) and the PAT route `GET /api/v1/projects/{ref}/runs`.
 * Cursors carry created_at in milliseconds, which is exact because runs get created_at from the
 * engine clock (a JS Date); a row inserted with `now()`'s microseconds could be skipped at a page edge.
 */
export async function listRuns(db: Queryable, environmentIds: string[], filters: RunListFilters, page: RunListPage): Promise<RunListRow[]> {
  const values: unknown[] = [environmentIds];
  const where = ["environment_id = ANY($1::text[])"];
  const add = (sql: (n: number) => string, value: unknown) => {
    values.push(value);
    where.push(sql(values.length));
  };
  if (filters.statuses) add((n) => `status = ANY($${n}::text[])`, filters.statuses);
  if (filters.taskIdentifiers) add((n) => `task_identifier = ANY($${n}::text[])`, filters.taskIdentifiers);
  if (filters.versions) add((n) => `worker_version = ANY($${n}::text[])`, filters.versions);
  // `tags <> '{}'` lets the planner use the partial GIN index (only runs with tags are in it).
  if (filters.tags) add((n) => `tags <> '{}' AND tags && $${n}::text[]`, filters.tags);
  if (filters.batchIds) add((n) => `batch_id = ANY($${n}::text[])`, filters.batchIds);
  if (filters.scheduleIds) add((n) => `schedule_id = ANY($${n}::text[])`, filters.scheduleIds);
  if (filters.queues) add((n) => `queue_name = ANY($${n}::text[])`, filters.queues);
  if (filters.sessionIds) add((n) => `id IN (SELECT run_id FROM session_runs WHERE session_id = ANY($${n}::text[]))`, filters.sessionIds);
  if (filters.isTest !== undefined) add((n) => `is_test = $${n}`, filters.isTest);
  if (filters.createdFrom) add((n) => `created_at >= $${n}`, filters.createdFrom);
  if (filters.createdTo) add((n) => `created_at <= $${n}`, filters.createdTo);
  if (page.keyset) {
    // Cursors come from clients: refuse values Postgres would choke on (a 400, not a 500).
    for (const value of page.keyset.values) {
      if ((value instanceof Date && Number.isNaN(value.getTime())) || (typeof value === "string" && value.includes("\u0000"))) {
        throw new ValidationError("page cursor: not a cursor returned by this API");
      }
    }
    const offset = values.length;
    where.push(page.keyset.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`));
    values.push(...page.keyset.values);
  }
  const order = page.direction === "desc" ? "created_at DESC, id DESC" : "created_at ASC, id ASC";
  values.push(page.limit);
  const { rows } = await db.query<RunListRow>(
    `SELECT runs.*, (SELECT slug FROM environments e WHERE e.id = runs.environment_id) AS environment_slug
     FROM runs WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT $${values.length}`,
    values,
  );
  return rows;
}
