import { ValidationError } from "../../errors.ts";
import { VERSION_CLOCK_MARGIN } from "../workers/worker-versions.ts";
import { presentedStatusCondition, presentedStatusSql } from "./pending-version.ts";
import { isFinal, isRunStatus, type RunStatus } from "./statuses.ts";

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
  /** Runs these bulk actions touched (bulk_action_runs, migration 0051: a cancel's runs, a replay's new runs). */
  bulkActionIds?: string[];
  createdFrom?: Date;
  createdTo?: Date;
  /**
   * Runs whose id starts with this (the dashboard's search): lowercase `run_` and base-36 only
   * (RUN_ID_PREFIX), which list-statement.ts relies on for its range condition.
   */
  idPrefix?: string;
}

/** One page request in (created_at DESC, id DESC) order, as the API's keyset paginator asks for it. */
export interface RunListPage {
  /** An extra condition on `created_at`/`id` with its own `$1`, `$2` … placeholders, or null. */
  keyset: { sql: string; values: unknown[] } | null;
  direction: "desc" | "asc";
  limit: number;
}

/**
 * Most lanes one statement reads (environments × status lanes × task or queue values). Past it,
 * tasks or queues become one `= ANY` condition in each lane: still right, only without the index's
 * order.
 */
export const MAX_RUN_LIST_LANES = 200;

/** What an id prefix search accepts: `run_` and up to the 21 base-36 characters of a run id. */
export const RUN_ID_PREFIX = /^run_[0-9a-z]{0,21}$/;

/** One way a lane narrows its rows: FROM items (unnest of a parameter) and conditions. */
interface Alternative {
  from: string[];
  where: string[];
}

const ANY_ROW: Alternative = { from: [], where: [] };

/**
 * The run list statement. A page is the newest `limit` runs of the union of *lanes*: each lane is
 * one environment (and, when filtered, one status group and one task or queue), read by a LATERAL
 * subquery whose equality conditions match the leading columns of an index in
 * (created_at DESC, id DESC) order, so that Postgres walks that index in page order and stops after
 * `limit` rows:
 * - no status, task or queue filter: runs_list (environment_id, created_at, id);
 * - a final status other than COMPLETED: runs_status_list (environment_id, list_status, …), which
 *   leaves COMPLETED runs out (migration 0029); COMPLETED, most runs, reads runs_list;
 * - live statuses (QUEUED, WAITING …) share one lane, runs_status_list's 'LIVE' entries: the runs
 *   not yet finished;
 * - a task: runs_task_list (environment_id, task_identifier, …);
 * - a queue: two lanes, as runs_queue_list holds only the runs on a queue other than their task's
 *   default `task/<id>`: those, and the runs of task <id> on `task/<id>` (runs_task_list);
 * - a bulk action, before any other filter: bulk_action_runs (environment_id, bulk_action_id,
 *   created_at, run_id), joined to runs, as tags are (below): its runs are at most the runs it
 *   touched, which every other filter is tested on;
 * - a tag, when no task or queue is asked for: run_tags (environment_id, tag, created_at, run_id),
 *   joined to runs; statuses are then a condition, and a run with two of the tags is listed once;
 * - isTest=true, with none of those: runs_test_list, which holds only test runs (migration 0033);
 * - a version starts each lane's walk at the newest time a run of it can have been created
 *   (environmentsFrom): a version whose runs are days old is read where they are.
 * With a status and a task or queue, the planner picks whichever index it expects to reach a page
 * sooner. Any other filter (and the queue, when tasks are filtered too) is tested on the rows a
 * lane reads. With `= ANY` instead of a lane per value the index's order would be lost and every
 * matching run of the window sorted (a million runs: 650 ms for the first page of a list over two
 * environments, measured when this was written). A status lane names its status as a literal (one of
 * RUN_STATUSES, checked here): a partial index serves only a statement whose condition implies
 * the index's predicate, which a parameter cannot. Statuses are matched and returned as presented
 * (pending-version.ts: a QUEUED run of a task no worker of its environment registered is
 * PENDING_VERSION), a probe of worker_tasks' primary key for the QUEUED runs a lane reads.
 */
export function runListStatement(environmentIds: string[], filters: RunListFilters, page: RunListPage): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  // Statuses are written into the statement (statusAlternatives): only real ones get there.
  for (const status of filters.statuses ?? []) if (!isRunStatus(status)) throw new ValidationError(`filter[status]: "${status}" is not a run status`);
  const versionBound = filters.versions ? `runs.created_at <= env.version_bound` : null;
  const envs = environmentsFrom(environmentIds, filters.versions, param);
  // Bulk actions choose the lanes before anything else: one per action, read from bulk_action_runs.
  const bulk = filters.bulkActionIds && environmentIds.length * filters.bulkActionIds.length <= MAX_RUN_LIST_LANES ? filters.bulkActionIds : null;
  // Tags choose the lanes when neither tasks nor queues do: one per tag, read from run_tags.
  const tags = !bulk && filters.tags && !filters.taskIdentifiers && !filters.queues && environmentIds.length * filters.tags.length <= MAX_RUN_LIST_LANES ? filters.tags : null;
  const statuses = tags || bulk ? [statusCondition(filters, param)] : statusAlternatives(filters, param);
  // Under bulk action lanes, tasks and queues are conditions (no room for lanes of their own).
  const room = bulk ? 0 : Math.floor(MAX_RUN_LIST_LANES / (environmentIds.length * statuses.length));
  const keys = keyAlternatives(filters, room, param);
  const rest = [...keys.filters, ...filterConditions(filters, param, { tagCondition: !tags, bulkActionCondition: !bulk })];
  const keyset = keysetCondition(page, values);
  const dir = page.direction === "desc" ? "DESC" : "ASC";
  const limit = param(page.limit);
  const runsLane = (status: Alternative, key: Alternative) =>
    `SELECT r.* FROM ${[envs, ...status.from, ...key.from].join(", ")},
       LATERAL (SELECT runs.* FROM runs WHERE ${["runs.environment_id = env.id", ...status.where, ...key.where, ...rest, ...(versionBound ? [versionBound] : []), ...(keyset ? [keyset] : [])].join(" AND ")}
                ORDER BY runs.created_at ${dir}, runs.id ${dir} LIMIT ${limit}) r`;
  let lanes: string[];
  if (bulk) {
    // As the tag lanes below: the window and the cursor on bulk_action_runs' own created_at and id.
    const window = [
      ...(filters.createdFrom ? [`created_at >= ${param(filters.createdFrom)}`] : []),
      ...(filters.createdTo ? [`created_at <= ${param(filters.createdTo)}`] : []),
      ...(versionBound ? ["created_at <= env.version_bound"] : []),
      ...(keyset ? [keyset] : []),
    ];
    const wanted = `unnest(${param(bulk)}::text[]) AS wanted_action(id)`;
    lanes = statuses.map((status) =>
      `SELECT r.* FROM ${envs}, ${wanted},
         LATERAL (SELECT runs.* FROM (SELECT * FROM (SELECT ba.created_at, ba.run_id AS id FROM bulk_action_runs ba WHERE ba.environment_id = env.id AND ba.bulk_action_id = wanted_action.id) touched
                                      ${window.length > 0 ? `WHERE ${window.join(" AND ")}` : ""}) tb
                  JOIN runs ON runs.id = tb.id
                  WHERE ${["runs.environment_id = env.id", ...status.where, ...keys.alternatives[0]!.where, ...rest].join(" AND ")}
                  ORDER BY tb.created_at ${dir}, tb.id ${dir} LIMIT ${limit}) r`);
  } else if (tags) {
    // The window and the cursor are read from run_tags itself (its created_at is the run's), so
    // that the walk starts at the cursor and stops at the window's edge; in `tagged` the
    // cursor's unqualified created_at and id are run_tags' own.
    const window = [
      ...(filters.createdFrom ? [`created_at >= ${param(filters.createdFrom)}`] : []),
      ...(filters.createdTo ? [`created_at <= ${param(filters.createdTo)}`] : []),
      ...(versionBound ? ["created_at <= env.version_bound"] : []),
      ...(keyset ? [keyset] : []),
    ];
    const wanted = `unnest(${param(tags)}::text[]) AS wanted(tag)`;
    lanes = statuses.map((status) =>
      `SELECT r.* FROM ${envs}, ${wanted},
         LATERAL (SELECT runs.* FROM (SELECT * FROM (SELECT rt.created_at, rt.run_id AS id FROM run_tags rt WHERE rt.environment_id = env.id AND rt.tag = wanted.tag) tagged
                                      ${window.length > 0 ? `WHERE ${window.join(" AND ")}` : ""}) tg
                  JOIN runs ON runs.id = tg.id
                  WHERE ${["runs.environment_id = env.id", ...status.where, ...rest].join(" AND ")}
                  ORDER BY tg.created_at ${dir}, tg.id ${dir} LIMIT ${limit}) r`);
  } else {
    lanes = statuses.flatMap((status) => keys.alternatives.map((key) => runsLane(status, key)));
  }
  // A run with two of the tags (or touched by two of the actions) is in two lanes: the page takes it once.
  const distinct = (tags && tags.length > 1) || (bulk && bulk.length > 1) ? "DISTINCT ON (r.created_at, r.id) " : "";
  const text = `SELECT ${distinct}r.*, (SELECT slug FROM environments e WHERE e.id = r.environment_id) AS environment_slug,
            ${presentedStatusSql("r")} AS presented_status
     FROM (${lanes.join("\n     UNION ALL ")}) r
     ORDER BY r.created_at ${dir}, r.id ${dir} LIMIT ${limit}`;
  return { text, values };
}

/**
 * The environments, one row each (`env.id`). With a version filter, also `env.version_bound`: no
 * run of the versions in that environment was created after it (worker_versions, migration 0033),
 * so each lane's walk starts there; NULL when none of them has a row there (no such runs).
 */
function environmentsFrom(environmentIds: string[], versions: string[] | undefined, param: (value: unknown) => string): string {
  const ids = `unnest(${param(environmentIds)}::text[])`;
  if (!versions) return `${ids} AS env(id)`;
  return `(SELECT e.id, (SELECT max(v.seen_until) + interval '${VERSION_CLOCK_MARGIN}' FROM worker_versions v
                       WHERE v.environment_id = e.id AND v.version = ANY(${param(versions)}::text[])) AS version_bound
           FROM ${ids} AS e(id)) AS env`;
}

/** The page's cursor condition, its values added to `values`; refused when not one this API made. */
function keysetCondition(page: RunListPage, values: unknown[]): string | null {
  if (!page.keyset) return null;
  // Cursors come from clients: refuse values Postgres would choke on (a 400, not a 500).
  for (const value of page.keyset.values) {
    if ((value instanceof Date && Number.isNaN(value.getTime())) || (typeof value === "string" && value.includes("\u0000"))) {
      throw new ValidationError("page cursor: not a cursor returned by this API");
    }
  }
  const offset = values.length;
  values.push(...page.keyset.values);
  return page.keyset.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`);
}

/** Statuses as one condition, for lanes chosen by tag. */
function statusCondition(filters: RunListFilters, param: (value: unknown) => string): Alternative {
  if (!filters.statuses) return ANY_ROW;
  return { from: [], where: [presentedStatusCondition("runs", filters.statuses, param(filters.statuses))] };
}

/** A lane per final status, written as a literal, and one for the live statuses. */
function statusAlternatives(filters: RunListFilters, param: (value: unknown) => string): Alternative[] {
  if (!filters.statuses) return [ANY_ROW];
  const lives = filters.statuses.filter((s) => !isFinal(s));
  return [
    ...filters.statuses.filter(isFinal).map((status) => ({ from: [], where: [`runs.list_status = '${status}'`] })),
    ...(lives.length > 0 ? [{ from: [], where: ["runs.list_status = 'LIVE'", presentedStatusCondition("runs", lives, param(lives))] }] : []),
  ];
}

/** A lane per task, else per queue (two kinds), within `room` lanes; past it, a condition. */
function keyAlternatives(filters: RunListFilters, room: number, param: (value: unknown) => string): { alternatives: Alternative[]; filters: string[] } {
  const { taskIdentifiers: tasks, queues } = filters;
  // Made only where used: a parameter no condition names has no type Postgres can determine.
  const queueCondition = () => (queues ? [`runs.queue_name = ANY(${param(queues)}::text[])`] : []);
  if (tasks) {
    if (tasks.length > room) return { alternatives: [ANY_ROW], filters: [`runs.task_identifier = ANY(${param(tasks)}::text[])`, ...queueCondition()] };
    return { alternatives: [{ from: [`unnest(${param(tasks)}::text[]) AS task(id)`], where: ["runs.task_identifier = task.id"] }], filters: queueCondition() };
  }
  if (!queues) return { alternatives: [ANY_ROW], filters: [] };
  const defaults = queues.filter((q) => q.startsWith(DEFAULT_QUEUE_PREFIX));
  if (queues.length + defaults.length > room) return { alternatives: [ANY_ROW], filters: queueCondition() };
  const alternatives: Alternative[] = [
    { from: [`unnest(${param(queues)}::text[]) AS queue(name)`], where: ["runs.queue_name = queue.name", `runs.queue_name <> '${DEFAULT_QUEUE_PREFIX}' || runs.task_identifier`] },
  ];
  if (defaults.length > 0) {
    const defaultTasks = defaults.map((q) => q.slice(DEFAULT_QUEUE_PREFIX.length));
    alternatives.push({
      from: [`unnest(${param(defaultTasks)}::text[], ${param(defaults)}::text[]) AS default_queue(task, name)`],
      where: ["runs.task_identifier = default_queue.task", "runs.queue_name = default_queue.name"],
    });
  }
  return { alternatives, filters: [] };
}

/** A task's default queue is `task/<id>` (insert-runs.ts); runs_queue_list leaves those runs out. */
const DEFAULT_QUEUE_PREFIX = "task/";

/** The conditions of the filters that do not choose a lane (status, task and queue do; tags when `options.tagCondition` is false). */
function filterConditions(filters: RunListFilters, param: (value: unknown) => string, options: { tagCondition: boolean; bulkActionCondition: boolean }): string[] {
  const where: string[] = [];
  if (filters.versions) where.push(`runs.worker_version = ANY(${param(filters.versions)}::text[])`);
  // `tags <> '{}'` lets the planner use the partial GIN index (only runs with tags are in it).
  if (filters.tags && options.tagCondition) where.push(`runs.tags <> '{}' AND runs.tags && ${param(filters.tags)}::text[]`);
  if (filters.batchIds) where.push(`runs.batch_id = ANY(${param(filters.batchIds)}::text[])`);
  if (filters.scheduleIds) where.push(`runs.schedule_id = ANY(${param(filters.scheduleIds)}::text[])`);
  if (filters.sessionIds) where.push(`runs.id IN (SELECT run_id FROM session_runs WHERE session_id = ANY(${param(filters.sessionIds)}::text[]))`);
  if (filters.bulkActionIds && options.bulkActionCondition) {
    where.push(`runs.id IN (SELECT run_id FROM bulk_action_runs WHERE environment_id = runs.environment_id AND bulk_action_id = ANY(${param(filters.bulkActionIds)}::text[]))`);
  }
  // Written as is: runs_test_list (migration 0033) is partial, WHERE is_test.
  if (filters.isTest !== undefined) where.push(filters.isTest ? "runs.is_test" : "NOT runs.is_test");
  if (filters.createdFrom) where.push(`runs.created_at >= ${param(filters.createdFrom)}`);
  if (filters.createdTo) where.push(`runs.created_at <= ${param(filters.createdTo)}`);
  if (filters.idPrefix !== undefined) where.push(idPrefixCondition(filters.idPrefix, param));
  return where;
}

/**
 * Ids starting with `prefix`, as a range the primary key's index can serve: a run id is `run_` and
 * 21 base-36 characters, so every id with the prefix sorts between the prefix itself and the prefix
 * followed by 'z's, in any collation (lowercase letters and digits compare the same way in all of
 * them); `starts_with` keeps the answer exact whatever the collation does at the edges.
 */
function idPrefixCondition(prefix: string, param: (value: unknown) => string): string {
  if (!RUN_ID_PREFIX.test(prefix)) throw new ValidationError(`run id prefix: "${prefix}" is not the start of a run id (run_ and lowercase letters and digits)`);
  const from = param(prefix);
  return `runs.id >= ${from} AND runs.id <= ${param(prefix + "z".repeat(21))} AND starts_with(runs.id, ${from})`;
}
