import { isPool, withTransaction, type Queryable } from "../../db/queryable.ts";
import { runListStatement, type RunListFilters, type RunListPage } from "./list-statement.ts";
import type { RunStatus } from "./statuses.ts";
import type { RunRow } from "./store.ts";

/**
 * A run row plus the slug of its environment (list items carry `env: {id, name}`). Its status is
 * the presented one (pending-version.ts): PENDING_VERSION for a QUEUED run of a never-registered task.
 */
export type RunListRow = RunRow & { environment_slug: string };

export type { RunListFilters, RunListPage } from "./list-statement.ts";

/**
 * Lists runs of the given environments matching `filters`, one keyset page at a time. Used by
 * `GET /api/v1/runs` (one environment) and the PAT route `GET /api/v1/projects/{ref}/runs`.
 * Cursors carry created_at in milliseconds, which is exact because runs get created_at from the
 * engine clock (a JS Date); a row inserted with `now()`'s microseconds could be skipped at a page edge.
 * The statement and why it has that shape: runListStatement.
 */
export async function listRuns(db: Queryable, environmentIds: string[], filters: RunListFilters, page: RunListPage): Promise<RunListRow[]> {
  const statement = runListStatement(environmentIds, filters, page);
  const select = async (q: Queryable) =>
    (await q.query<RunListRow & { presented_status: RunStatus }>(statement.text, statement.values)).rows.map(({ presented_status, ...row }) => ({ ...row, status: presented_status }));
  // On a caller's transaction the settings would outlive this statement: it runs as it is.
  return isPool(db)
    ? withTransaction(db, async (tx) => {
        await tx.query(LIST_PLANNER_SETTINGS);
        return select(tx);
      })
    : select(db);
}

/**
 * A page of `listRuns` in the caller's transaction `tx`, planned as listRuns plans it on a pool: the
 * settings hold for this statement only (a bulk action's chunk lists its runs, then cancels or
 * replays them in the same transaction: bulk-actions/process-chunk.ts).
 */
export async function listRunsInTransaction(tx: Queryable, environmentIds: string[], filters: RunListFilters, page: RunListPage): Promise<RunListRow[]> {
  await tx.query(LIST_PLANNER_SETTINGS);
  const rows = await listRuns(tx, environmentIds, filters, page);
  // (A failed list aborts the transaction: nothing after it runs to need the reset.)
  await tx.query("RESET enable_seqscan");
  return rows;
}

/** The most runs countRuns counts (a bulk action's total): past it, it answers this. */
export const MAX_RUN_COUNT = 10_000_000;

/** How many runs of the environments match `filters` (at most MAX_RUN_COUNT), read as the list reads them. */
export async function countRuns(db: Queryable, environmentIds: string[], filters: RunListFilters): Promise<number> {
  const statement = runListStatement(environmentIds, filters, { keyset: null, direction: "desc", limit: MAX_RUN_COUNT });
  const count = async (q: Queryable) => (await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${statement.text}) counted`, statement.values)).rows[0]!.n;
  return isPool(db)
    ? withTransaction(db, async (tx) => {
        await tx.query(LIST_PLANNER_SETTINGS);
        return count(tx);
      })
    : count(db);
}

/**
 * What the list statement is planned with. A filter that matches few runs of the window (a rare
 * status, a task that has not run lately) leaves the planner expecting to read the whole window
 * for one page; it then prefers reading all of `runs` (its heap is half empty: fillfactor 50,
 * migration 0012) to the window's part of runs_list, 3–6 times slower (a million runs: 470–870 ms
 * against 135–165 ms). A list is always of given environments in created_at order, which
 * runs_list (or a filter's own index) serves; a seq scan of runs is never much better. (JIT, which
 * would compile such a plan for another 15–55 ms to run it once, is off on every svc connection:
 * db/queryable.ts, DEFAULT_SETTINGS.)
 */
const LIST_PLANNER_SETTINGS = "SET LOCAL enable_seqscan = off";
