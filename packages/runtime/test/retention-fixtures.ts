// Rows as the engine leaves them, for the retention tests: runs triggered through the engine at
// the fake clock's time, then ended the way the worker's finish statement ends them.
import type { Queryable } from "@svc/runtime/db";
import { runRetention, type DueWork, type FakeClock, type RunStatus } from "@svc/runtime/engine";

export const DAY = 86_400_000;

/** The retention work as a worker runs it, with the default of 30 days, but no rest between batches (`restRatio`). */
export function retentionWork(options: { defaultDays?: number; batchSize?: number; restRatio?: number } = {}): DueWork {
  return runRetention({ defaultDays: options.defaultDays ?? 30, intervalMs: 600_000, batchSize: options.batchSize ?? 1000, restRatio: options.restRatio ?? 0 });
}

const ATTEMPT_STATUS: Partial<Record<RunStatus, string>> = { COMPLETED: "COMPLETED", FAILED: "FAILED", CANCELED: "CANCELED", TIMED_OUT: "TIMED_OUT" };

/**
 * Ends a run at `at` as an attempt's finish does: final status, finished_at, the attempt's row,
 * and a step it recorded in its ledger.
 */
export async function finishRun(db: Queryable, runId: string, at: Date, status: RunStatus = "COMPLETED"): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE runs SET status = $2, finished_at = $3, updated_at = $3, started_at = coalesce(started_at, $3), attempt_number = attempt_number + 1,
       output = CASE WHEN $2 = 'COMPLETED' THEN '{"ok":true}' END, output_type = CASE WHEN $2 = 'COMPLETED' THEN 'application/json' END
     WHERE id = $1`,
    [runId, status, at],
  );
  if (rowCount !== 1) throw new Error(`no run ${runId}`);
  await db.query(
    `INSERT INTO run_attempts (run_id, number, status, started_at, finished_at) SELECT id, attempt_number, $2, $3, $3 FROM runs WHERE id = $1`,
    [runId, ATTEMPT_STATUS[status] ?? "FAILED", at],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, created_at, resolved_at)
     VALUES ($1, 0, 'step:charge#1', 'step', 'charge', true, '{"ok":true,"output":"1"}', $2, $2)`,
    [runId, at],
  );
}

/**
 * A wait the run made and that completed (a `wait.for`): a DATETIME waitpoint completed at `at`
 * and the resolved ledger entry pointing at it. Returns the waitpoint's id.
 */
export async function completedWait(db: Queryable, runId: string, at: Date): Promise<string> {
  const id = `waitpoint_wait_${runId.slice(4)}`;
  await db.query(
    `INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, completed_at, output, output_type, created_at)
     SELECT $1, environment_id, 'DATETIME', 'COMPLETED', $3, $3, '{"date":"x"}', 'application/json', $3 FROM runs WHERE id = $2`,
    [id, runId, at],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, waitpoint_id, resolved, outcome, created_at, resolved_at)
     VALUES ($1, 0, 'datetime#1', 'datetime', $3::timestamptz::text, $2, true, '{"ok":true}', $3, $3)`,
    [runId, id, at],
  );
  return id;
}

/** How many rows of each kind a run still has. */
export async function rowsOf(db: Queryable, runId: string): Promise<{ run: number; attempts: number; ledger: number }> {
  const { rows } = await db.query<{ run: number; attempts: number; ledger: number }>(
    `SELECT (SELECT count(*) FROM runs WHERE id = $1)::int AS run, (SELECT count(*) FROM run_attempts WHERE run_id = $1)::int AS attempts,
            (SELECT count(*) FROM run_ledger WHERE run_id = $1)::int AS ledger`,
    [runId],
  );
  return rows[0]!;
}

export async function exists(db: Queryable, table: string, column: string, value: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM ${table} WHERE ${column} = $1 LIMIT 1`, [value]);
  return rows.length > 0;
}

/** Runs `fn` with the fake clock at `time`. */
export async function at<T>(clock: FakeClock, time: Date, fn: () => Promise<T>): Promise<T> {
  clock.set(time);
  return fn();
}

/**
 * `count` runs of the environment that finished at `from` + 1 s (created 1 ms apart from `from`),
 * each with its attempt and a step in its ledger: what a busy environment leaves behind, inserted
 * in three statements. Ids are `run_<prefix>_<n>`.
 */
export async function insertFinishedRuns(db: Queryable, environmentId: string, count: number, from: Date, prefix: string): Promise<void> {
  await db.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, payload, output, output_type, attempt_number,
       created_at, updated_at, started_at, finished_at)
     SELECT 'run_' || $4 || '_' || i, e.id, e.project_id, 'bulk', 'COMPLETED', 'task/bulk', '{"i":' || i || '}', '{"ok":true}', 'application/json', 1,
       $3::timestamptz + i * interval '1 ms', $3::timestamptz + i * interval '1 ms' + interval '1 s', $3::timestamptz + i * interval '1 ms',
       $3::timestamptz + i * interval '1 ms' + interval '1 s'
     FROM environments e, generate_series(1, $2::int) i WHERE e.id = $1`,
    [environmentId, count, from, prefix],
  );
  await db.query(
    `INSERT INTO run_attempts (run_id, number, status, started_at, finished_at)
     SELECT id, 1, 'COMPLETED', started_at, finished_at FROM runs WHERE id LIKE 'run\\_' || $1 || '\\_%'`,
    [prefix],
  );
  await db.query(
    `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, created_at, resolved_at)
     SELECT id, 0, 'step:charge#1', 'step', 'charge', true, '{"ok":true,"output":"1"}', started_at, started_at FROM runs WHERE id LIKE 'run\\_' || $1 || '\\_%'`,
    [prefix],
  );
}

export async function countRuns(db: Queryable, prefix: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id LIKE 'run\\_' || $1 || '\\_%'`, [prefix]);
  return rows[0]!.n;
}
