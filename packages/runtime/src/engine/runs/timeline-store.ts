import type { Queryable } from "../../db/queryable.ts";
import type { LedgerKind } from "../../ledger/entries.ts";
import type { WaitpointStatus, WaitpointType } from "../waitpoints/statuses.ts";
import type { RunStatus } from "./statuses.ts";

// The reads behind a run's timeline (timeline.ts): one statement per table, each bounded by
// `limit`, each in the order its entries start so that the first `limit` of every table together
// hold the first `limit` entries of the whole timeline. Only what the timeline shows is selected:
// a ledger outcome can hold a step's whole return value, of which the timeline needs two fields.

export interface TimelineRunRow {
  id: string;
  status: RunStatus;
  task_identifier: string;
  attempt_number: number;
  worker_id: string | null;
  parent_run_id: string | null;
  root_run_id: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** The run, when it belongs to the environment. */
export async function timelineRun(db: Queryable, environmentId: string, runId: string): Promise<TimelineRunRow | null> {
  const { rows } = await db.query<TimelineRunRow>(
    `SELECT id, status, task_identifier, attempt_number, worker_id, parent_run_id, root_run_id, created_at, started_at, finished_at
     FROM runs WHERE id = $1 AND environment_id = $2`,
    [runId, environmentId],
  );
  return rows[0] ?? null;
}

export interface TimelineAttemptRow {
  number: number;
  status: string;
  worker_id: string | null;
  error_name: string | null;
  error_message: string | null;
  retry_at: Date | null;
  /** When the attempt's last execution began: after a suspension, its last resume. */
  started_at: Date;
  finished_at: Date | null;
}

/** The run's ended attempts (a row is written as an attempt ends), first `limit` by number. */
export async function timelineAttempts(db: Queryable, runId: string, limit: number): Promise<TimelineAttemptRow[]> {
  const { rows } = await db.query<TimelineAttemptRow>(
    `SELECT number, status, worker_id, error->>'name' AS error_name, error->>'message' AS error_message, retry_at, started_at, finished_at
     FROM run_attempts WHERE run_id = $1 ORDER BY number LIMIT $2`,
    [runId, limit],
  );
  return rows;
}

export interface TimelineLedgerRow {
  epoch: number;
  step_key: string;
  kind: LedgerKind;
  target: string | null;
  waitpoint_id: string | null;
  resolved: boolean;
  /** The outcome's `ok` (null: no outcome yet, or none recorded). */
  ok: boolean | null;
  error_name: string | null;
  error_message: string | null;
  /** A step: when its result was recorded. A wait: when it was registered (and, if pending, the run suspended). */
  created_at: Date;
  /** A step: as created_at. A wait: when its waitpoint completed (or, finished already, as created_at). */
  resolved_at: Date | null;
  waitpoint_type: WaitpointType | null;
  waitpoint_status: WaitpointStatus | null;
  timeout_at: Date | null;
  completed_by_run_id: string | null;
  completed_by_batch_id: string | null;
}

/**
 * The run's ledger entries of every epoch with their waitpoints, first `limit` by when they were
 * recorded; entries recorded at the same moment in call order (`#2` before `#10`).
 */
export async function timelineLedger(db: Queryable, runId: string, limit: number): Promise<TimelineLedgerRow[]> {
  const { rows } = await db.query<TimelineLedgerRow>(
    `SELECT l.epoch, l.step_key, l.kind, l.target, l.waitpoint_id, l.resolved,
       CASE jsonb_typeof(l.outcome->'ok') WHEN 'boolean' THEN (l.outcome->>'ok')::boolean END AS ok,
       l.outcome->'error'->>'name' AS error_name, l.outcome->'error'->>'message' AS error_message,
       l.created_at, l.resolved_at,
       w.type AS waitpoint_type, w.status AS waitpoint_status, w.timeout_at, w.completed_by_run_id, w.completed_by_batch_id
     FROM run_ledger l LEFT JOIN waitpoints w ON w.id = l.waitpoint_id
     WHERE l.run_id = $1
     ORDER BY l.created_at, l.epoch, length(l.step_key), l.step_key
     LIMIT $2`,
    [runId, limit],
  );
  return rows;
}

export interface TimelineChildRow {
  id: string;
  task_identifier: string;
  status: RunStatus;
  batch_id: string | null;
  batch_index: number | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** The runs the run triggered (by triggerAndWait, batchTriggerAndWait or a plain trigger), first `limit` by creation. */
export async function timelineChildren(db: Queryable, environmentId: string, runId: string, limit: number): Promise<TimelineChildRow[]> {
  const { rows } = await db.query<TimelineChildRow>(
    `SELECT id, task_identifier, status, batch_id, batch_index, created_at, started_at, finished_at
     FROM runs WHERE parent_run_id = $1 AND environment_id = $2 ORDER BY created_at, id LIMIT $3`,
    [runId, environmentId, limit],
  );
  return rows;
}
