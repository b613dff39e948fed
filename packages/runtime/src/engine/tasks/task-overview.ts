import type { Queryable } from "../../db/queryable.ts";
import type { Packet } from "../runs/payloads.ts";

/** A run of a task as the tasks page lists it. */
export interface TaskRecentRun {
  id: string;
  status: string;
  isTest: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A task some worker of the environment registered (worker_tasks), with its newest runs. */
export interface TaskOverview {
  taskIdentifier: string;
  queue: string;
  kind: string;
  concurrencyLimit: number | null;
  /** The rate limit it declared for its queue (docs/rate-limits.md); null: none. */
  rateLimit: { limit: number; periodMs: number } | null;
  /** The concurrency limits its runs hold unless their trigger names others (its `concurrency`; the inline one as task/<id>); empty: none. */
  concurrencyLimits: string[];
  /** The version of the worker that registered it last, and when. */
  workerVersion: string;
  registeredAt: Date;
  /** Newest first, at most the `recentRuns` asked for. */
  recentRuns: TaskRecentRun[];
  /** The newest run's stored payload (what a Test form starts from); null when it has no run or no payload. */
  lastPayload: Packet | null;
}

interface TaskRow {
  task_identifier: string;
  queue_name: string;
  kind: string;
  concurrency_limit: number | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  concurrency_limits: string[] | null;
  worker_version: string;
  registered_at: Date;
}

interface RecentRunRow {
  task: string;
  id: string;
  status: string;
  is_test: boolean;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  payload: string | null;
  payload_type: string;
}

/**
 * The tasks of an environment (`taskIdentifiers`: all of them when omitted), each with its newest
 * `recentRuns` runs. Two statements: the registrations, then per task a walk of runs_task_list
 * (environment_id, task_identifier, created_at DESC, id DESC) that stops after `recentRuns` rows, so
 * the cost is per task, not per run of the environment. Only the newest run's payload is read.
 */
export async function taskOverview(db: Queryable, environmentId: string, options: { recentRuns: number; taskIdentifiers?: string[] }): Promise<TaskOverview[]> {
  const { rows: tasks } = await db.query<TaskRow>(
    `SELECT task_identifier, queue_name, kind, concurrency_limit, rate_limit, rate_period_ms, concurrency_limits, worker_version, registered_at
       FROM worker_tasks
      WHERE environment_id = $1 AND ($2::text[] IS NULL OR task_identifier = ANY($2::text[]))
      ORDER BY task_identifier`,
    [environmentId, options.taskIdentifiers ?? null],
  );
  if (tasks.length === 0) return [];
  const { rows: runs } = await db.query<RecentRunRow>(
    `SELECT t.task, r.id, r.status, r.is_test, r.created_at, r.started_at, r.finished_at,
            CASE WHEN r.n = 1 THEN r.payload END AS payload, r.payload_type
       FROM unnest($2::text[]) AS t(task),
            LATERAL (SELECT id, status, is_test, created_at, started_at, finished_at, payload, payload_type,
                            row_number() OVER (ORDER BY created_at DESC, id DESC) AS n
                       FROM runs WHERE environment_id = $1 AND task_identifier = t.task
                      ORDER BY created_at DESC, id DESC LIMIT $3) r
      ORDER BY t.task, r.created_at DESC, r.id DESC`,
    [environmentId, tasks.map((t) => t.task_identifier), options.recentRuns],
  );
  const byTask = new Map<string, RecentRunRow[]>();
  for (const run of runs) byTask.set(run.task, [...(byTask.get(run.task) ?? []), run]);
  return tasks.map((t) => {
    const recent = byTask.get(t.task_identifier) ?? [];
    const newest = recent[0];
    return {
      taskIdentifier: t.task_identifier,
      queue: t.queue_name,
      kind: t.kind,
      concurrencyLimit: t.concurrency_limit,
      rateLimit: t.rate_limit === null || t.rate_period_ms === null ? null : { limit: t.rate_limit, periodMs: t.rate_period_ms },
      concurrencyLimits: t.concurrency_limits ?? [],
      workerVersion: t.worker_version,
      registeredAt: t.registered_at,
      recentRuns: recent.map((r) => ({ id: r.id, status: r.status, isTest: r.is_test, createdAt: r.created_at, startedAt: r.started_at, finishedAt: r.finished_at })),
      lastPayload: newest && newest.payload !== null ? { data: newest.payload, type: newest.payload_type } : null,
    };
  });
}
