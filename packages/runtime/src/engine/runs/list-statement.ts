import { ValidationError } from "../../errors.ts";
import type { RunListFilters, RunListPage } from "./list.ts";
import { isFinal, isRunStatus } from "./statuses.ts";

/**
 * Most lanes one statement reads (environments × status lanes × tasks). Past it, tasks become
 * one `= ANY` condition in each lane: still right, only without the task index's order.
 */
export const MAX_RUN_LIST_LANES = 200;

/**
 * The run list statement. A page is the newest `limit` runs of the union of *lanes*: each lane is
 * one environment (and, when filtered, one status group and one task), read by a LATERAL subquery
 * whose equality conditions match the leading columns of an index in (created_at DESC, id DESC)
 * order, so that Postgres walks that index in page order and stops after `limit` rows:
 * - no status or task filter: runs_list (environment_id, created_at, id);
 * - a final status other than COMPLETED: runs_status_list (environment_id, list_status, …), which
 *   leaves COMPLETED runs out (migration 0029); COMPLETED, most runs, reads runs_list;
 * - live statuses (QUEUED, WAITING …) share one lane, runs_status_list's 'LIVE' entries: the runs
 *   not yet finished;
 * - a task: runs_task_list (environment_id, task_identifier, …); with a status too, the planner
 *   picks whichever index it expects to reach a page sooner.
 * Any other filter is tested on the rows a lane reads. With `= ANY` instead of a lane per value
 * the index's order would be lost and every matching run of the window sorted (a million runs:
 * 650 ms for the first page of a list over two environments, bench/README.md). A status lane names
 * its status as a literal (one of RUN_STATUSES, checked here): a partial index serves only a
 * statement whose condition implies the index's predicate, which a parameter cannot.
 */
export function runListStatement(environmentIds: string[], filters: RunListFilters, page: RunListPage): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const envs = `unnest(${param(environmentIds)}::text[]) AS env(id)`;
  for (const status of filters.statuses ?? []) if (!isRunStatus(status)) throw new ValidationError(`filter[status]: "${status}" is not a run status`);
  const finals = filters.statuses?.filter(isFinal) ?? [];
  const lives = filters.statuses?.filter((s) => !isFinal(s)) ?? [];
  const statusLanes = finals.length + (lives.length > 0 ? 1 : 0);
  const tasks = filters.taskIdentifiers;
  const taskLanes = tasks !== undefined && environmentIds.length * Math.max(statusLanes, 1) * tasks.length <= MAX_RUN_LIST_LANES;
  const taskFrom = taskLanes ? [`unnest(${param(tasks)}::text[]) AS task(id)`] : [];
  const taskWhere = !tasks ? [] : taskLanes ? ["runs.task_identifier = task.id"] : [`runs.task_identifier = ANY(${param(tasks)}::text[])`];
  const rest = filterConditions(filters, param);
  // Cursors come from clients: refuse values Postgres would choke on (a 400, not a 500).
  if (page.keyset) {
    for (const value of page.keyset.values) {
      if ((value instanceof Date && Number.isNaN(value.getTime())) || (typeof value === "string" && value.includes("\u0000"))) {
        throw new ValidationError("page cursor: not a cursor returned by this API");
      }
    }
    const offset = values.length;
    rest.push(page.keyset.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`));
    values.push(...page.keyset.values);
  }
  const dir = page.direction === "desc" ? "DESC" : "ASC";
  const limit = param(page.limit);
  const lane = (where: string[]) =>
    `SELECT r.* FROM ${[envs, ...taskFrom].join(", ")},
       LATERAL (SELECT runs.* FROM runs WHERE ${["runs.environment_id = env.id", ...where, ...taskWhere, ...rest].join(" AND ")}
                ORDER BY runs.created_at ${dir}, runs.id ${dir} LIMIT ${limit}) r`;
  const lanes: string[] = [];
  if (!filters.statuses) lanes.push(lane([]));
  for (const status of finals) lanes.push(lane([`runs.list_status = '${status}'`]));
  if (lives.length > 0) lanes.push(lane(["runs.list_status = 'LIVE'", `runs.status = ANY(${param(lives)}::text[])`]));
  const text = `SELECT r.*, (SELECT slug FROM environments e WHERE e.id = r.environment_id) AS environment_slug
     FROM (${lanes.join("\n     UNION ALL ")}) r
     ORDER BY r.created_at ${dir}, r.id ${dir} LIMIT ${limit}`;
  return { text, values };
}

/** The conditions of the filters that do not choose a lane (status and task do). */
function filterConditions(filters: RunListFilters, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filters.versions) where.push(`runs.worker_version = ANY(${param(filters.versions)}::text[])`);
  // `tags <> '{}'` lets the planner use the partial GIN index (only runs with tags are in it).
  if (filters.tags) where.push(`runs.tags <> '{}' AND runs.tags && ${param(filters.tags)}::text[]`);
  if (filters.batchIds) where.push(`runs.batch_id = ANY(${param(filters.batchIds)}::text[])`);
  if (filters.scheduleIds) where.push(`runs.schedule_id = ANY(${param(filters.scheduleIds)}::text[])`);
  if (filters.queues) where.push(`runs.queue_name = ANY(${param(filters.queues)}::text[])`);
  if (filters.sessionIds) where.push(`runs.id IN (SELECT run_id FROM session_runs WHERE session_id = ANY(${param(filters.sessionIds)}::text[]))`);
  if (filters.isTest !== undefined) where.push(`runs.is_test = ${param(filters.isTest)}`);
  if (filters.createdFrom) where.push(`runs.created_at >= ${param(filters.createdFrom)}`);
  if (filters.createdTo) where.push(`runs.created_at <= ${param(filters.createdTo)}`);
  return where;
}
