import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";

/**
 * A queue as the queues API names it: by its `queue_…` id, or by kind and name — a task's own
 * queue (`task`, the task id; stored as `task/<id>`) or one tasks name (`custom`).
 */
export type QueueRef = { id: string } | { type: "task" | "custom"; name: string };

/** One queue of an environment, with what decides its limit and its runs now. */
export interface QueueState {
  id: string;
  /** The stored name (`task/<id>` for a task's own queue). */
  name: string;
  paused: boolean;
  /** The strictest concurrencyLimit its tasks registered; null: none. */
  declaredLimit: number | null;
  /** An operator's limit, until a reset; null: none. */
  limitOverride: number | null;
  overriddenAt: Date | null;
  overriddenBy: string | null;
  /** EXECUTING runs (offered or leased). */
  running: number;
  /** QUEUED runs whose start is due. */
  queued: number;
}

interface QueueStateRow {
  id: string;
  name: string;
  paused: boolean;
  declared_limit: number | null;
  concurrency_limit_override: number | null;
  overridden_at: Date | null;
  overridden_by: string | null;
  running: number;
  queued: number;
}

/** The stored name a reference by kind names. */
export function storedQueueName(ref: { type: "task" | "custom"; name: string }): string {
  return ref.type === "task" ? `task/${ref.name.replace(/^task\//, "")}` : ref.name;
}

/**
 * The columns of QueueStateRow for the queues rows `q` of environment `$1`. The counts read the
 * environment's live runs (index runs_status_list), not its history.
 */
const STATE_COLUMNS = `q.id, q.name, q.paused, q.concurrency_limit_override, q.overridden_at, q.overridden_by,
       (SELECT min(wt.concurrency_limit) FROM worker_tasks wt WHERE wt.environment_id = $1 AND wt.queue_name = q.name) AS declared_limit,
       (SELECT count(*)::int FROM runs r WHERE r.environment_id = $1 AND r.list_status = 'LIVE' AND r.queue_name = q.name AND r.status = 'EXECUTING') AS running,
       (SELECT count(*)::int FROM runs r WHERE r.environment_id = $1 AND r.list_status = 'LIVE' AND r.queue_name = q.name AND r.status = 'QUEUED' AND r.available_at IS NULL) AS queued`;

function stateOf(row: QueueStateRow): QueueState {
  return {
    id: row.id,
    name: row.name,
    paused: row.paused,
    declaredLimit: row.declared_limit,
    limitOverride: row.concurrency_limit_override,
    overriddenAt: row.overridden_at,
    overriddenBy: row.overridden_by,
    running: row.running,
    queued: row.queued,
  };
}

/** The queue `ref` names in environment `environmentId`; NotFoundError when there is none. */
export async function retrieveQueue(db: Queryable, environmentId: string, ref: QueueRef): Promise<QueueState> {
  const byId = "id" in ref;
  const { rows } = await db.query<QueueStateRow>(
    `SELECT ${STATE_COLUMNS} FROM queues q WHERE q.environment_id = $1 AND ${byId ? "q.id" : "q.name"} = $2`,
    [environmentId, byId ? ref.id : storedQueueName(ref)],
  );
  if (!rows[0]) throw new NotFoundError(byId ? `No queue with id ${ref.id}` : `No ${ref.type} queue named ${ref.name}`);
  return stateOf(rows[0]);
}

/** A page of the environment's queues, by name (`page` 1-based). */
export async function listQueues(db: Queryable, environmentId: string, page: number, perPage: number): Promise<{ queues: QueueState[]; count: number }> {
  const [{ rows }, counted] = await Promise.all([
    db.query<QueueStateRow>(
      `SELECT ${STATE_COLUMNS} FROM queues q WHERE q.environment_id = $1 ORDER BY q.name LIMIT $2 OFFSET $3`,
      [environmentId, perPage, (page - 1) * perPage],
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM queues WHERE environment_id = $1`, [environmentId]),
  ]);
  return { queues: rows.map(stateOf), count: counted.rows[0]!.n };
}

/**
 * Records the queues a worker's tasks run in (registerTasks), so that the API can list and control
 * them before their first run. Existing rows keep what an operator set.
 */
export async function registerQueues(db: Queryable, environmentId: string, names: string[], now: Date): Promise<void> {
  if (names.length === 0) return;
  await db.query(
    `INSERT INTO queues (environment_id, name, created_at, updated_at)
     SELECT $1, n, $3, $3 FROM unnest($2::text[]) AS n
     ON CONFLICT (environment_id, name) DO NOTHING`,
    [environmentId, names, now],
  );
}

/**
 * The queues among `names` that an operator controls now (paused, or limit overridden): a worker
 * claims their runs with the queue's own claim, as it does for the queues its tasks limit.
 */
export async function controlledQueues(db: Queryable, environmentId: string, names: string[]): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM queues WHERE environment_id = $1 AND name = ANY ($2::text[]) AND (paused OR concurrency_limit_override IS NOT NULL)`,
    [environmentId, names],
  );
  return rows.map((r) => r.name);
}
