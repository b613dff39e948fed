import type { Queryable } from "../../db/queryable.ts";
import type { RunStatus } from "./statuses.ts";

/**
 * PENDING_VERSION, as Trigger.dev v4 shows it: a run of a task that no worker of its environment
 * has registered waits for a version with the task, then is queued. svc's engine keeps such a run
 * QUEUED (a worker that registers the task claims it as it would any other: nothing moves it), and
 * the API presents it as PENDING_VERSION: a QUEUED run whose (environment, task) has no row in
 * worker_tasks, which is that table's primary key, so the test is one index probe per run. Once a
 * worker registers the task, the same run reads QUEUED, then EXECUTING when it is claimed.
 */
export function neverRegisteredSql(run: string): string {
  return `NOT EXISTS (SELECT 1 FROM worker_tasks wt WHERE wt.environment_id = ${run}.environment_id AND wt.task_identifier = ${run}.task_identifier)`;
}

/** The status a run is shown with (above): PENDING_VERSION for a QUEUED run of a never-registered task. */
export function presentedStatusSql(run: string): string {
  return `CASE WHEN ${run}.status = 'QUEUED' AND ${neverRegisteredSql(run)} THEN 'PENDING_VERSION' ELSE ${run}.status END`;
}

/**
 * The condition of a `filter[status]` on a run aliased `run`, with the statuses as presented: a
 * QUEUED run matches QUEUED only when its task was registered, PENDING_VERSION only when it was not.
 * `statuses` is the parameter placeholder of the wanted statuses (a text[]).
 */
export function presentedStatusCondition(run: string, wanted: readonly RunStatus[], statuses: string): string {
  const queued = wanted.includes("QUEUED");
  const pending = wanted.includes("PENDING_VERSION");
  const match = `${run}.status = ANY(${statuses}::text[])`;
  if (queued && !pending) return `(${match} AND (${run}.status <> 'QUEUED' OR NOT ${neverRegisteredSql(run)}))`;
  if (pending && !queued) return `(${match} OR (${run}.status = 'QUEUED' AND ${neverRegisteredSql(run)}))`;
  return match;
}

/** Whether `run`, read from `runs`, is presented as PENDING_VERSION (one probe, QUEUED runs only). */
export async function presentedStatus(db: Queryable, run: { status: RunStatus; environment_id: string; task_identifier: string }): Promise<RunStatus> {
  if (run.status !== "QUEUED") return run.status;
  const { rows } = await db.query(`SELECT 1 FROM worker_tasks WHERE environment_id = $1 AND task_identifier = $2`, [run.environment_id, run.task_identifier]);
  return rows.length === 0 ? "PENDING_VERSION" : "QUEUED";
}
