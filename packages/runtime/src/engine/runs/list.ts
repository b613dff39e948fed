import { isPool, withTransaction, type Queryable } from "../../db/queryable.ts";
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
 *
 * Each environment is read in its own LATERAL subquery with `environment_id = env.id`, so that
 * Postgres walks runs_list in page order and stops after `limit` rows; the page is then the
 * first `limit` of those. With `environment_id = ANY($1)` instead it could not use the index's
 * order (the environment is not one value) and sorted every run of the window: at a million runs,
 * 650 ms for the first page (bench/README.md, run list).
 */
export async function listRuns(db: Queryable, environmentIds: string[], filters: RunListFilters, page: RunListPage): Promise<RunListRow[]> {
  const values: unknown[] = [environmentIds];
  const where = ["runs.environment_id = env.id"];
  const add = (sql: (n: number) => string, value: unknown) => {
    values.push(value);
    where.push(sql(values.length));
  };
  if (filters.statuses) add((n) => `runs.status = ANY($${n}::text[])`, filters.statuses);
  if (filters.taskIdentifiers) add((n) => `runs.task_identifier = ANY($${n}::text[])`, filters.taskIdentifiers);
  if (filters.versions) add((n) => `runs.worker_version = ANY($${n}::text[])`, filters.versions);
  // `tags <> '{}'` lets the planner use the partial GIN index (only runs with tags are in it).
  if (filters.tags) add((n) => `runs.tags <> '{}' AND runs.tags && $${n}::text[]`, filters.tags);
  if (filters.batchIds) add((n) => `runs.batch_id = ANY($${n}::text[])`, filters.batchIds);
  if (filters.scheduleIds) add((n) => `runs.schedule_id = ANY($${n}::text[])`, filters.scheduleIds);
  if (filters.queues) add((n) => `runs.queue_name = ANY($${n}::text[])`, filters.queues);
  if (filters.sessionIds) add((n) => `runs.id IN (SELECT run_id FROM session_runs WHERE session_id = ANY($${n}::text[]))`, filters.sessionIds);
  if (filters.isTest !== undefined) add((n) => `runs.is_test = $${n}`, filters.isTest);
  if (filters.createdFrom) add((n) => `runs.created_at >= $${n}`, filters.createdFrom);
  if (filters.createdTo) add((n) => `runs.created_at <= $${n}`, filters.createdTo);
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
  const dir = page.direction === "desc" ? "DESC" : "ASC";
  values.push(page.limit);
  const limit = `$${values.length}`;
  const select = async (q: Queryable) =>
    (await q.query<RunListRow>(
      `SELECT r.*, (SELECT slug FROM environments e WHERE e.id = r.environment_id) AS environment_slug
       FROM unnest($1::text[]) AS env(id),
         LATERAL (SELECT runs.* FROM runs WHERE ${where.join(" AND ")} ORDER BY runs.created_at ${dir}, runs.id ${dir} LIMIT ${limit}) r
       ORDER BY r.created_at ${dir}, r.id ${dir} LIMIT ${limit}`,
      values,
    )).rows;
  // On a caller's transaction the settings would outlive this statement: it runs as it is.
  return isPool(db)
    ? withTransaction(db, async (tx) => {
        await tx.query(LIST_PLANNER_SETTINGS);
        return select(tx);
      })
    : select(db);
}

/**
 * What the list statement is planned with. A filter that matches few runs of the window (a rare
 * status, a task that has not run lately) leaves the planner expecting to read the whole window
 * for one page; it then prefers reading all of `runs` (its heap is half empty: fillfactor 50,
 * migration 0012) to the window's part of runs_list, 3–6 times slower (a million runs: 470–870 ms
 * against 135–165 ms). A list is always of given environments in created_at order, which
 * runs_list (or a filter's own index) serves; a seq scan of runs is never much better. JIT would
 * compile such a plan (its cost is over jit_above_cost) for another 15–55 ms, to run it once.
 */
const LIST_PLANNER_SETTINGS = "SET LOCAL enable_seqscan = off; SET LOCAL jit = off";
