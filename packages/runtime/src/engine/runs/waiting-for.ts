import type { Queryable } from "../../db/queryable.ts";
import { KEYED_EPOCH } from "../../ledger/entries.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import type { WaitpointType } from "../waitpoints/statuses.ts";

/** A waitpoint a WAITING run waits on, with what it takes to end the wait. */
export interface RunWait {
  waitpointId: string;
  type: WaitpointType;
  /** MANUAL and SESSION: when the wait times out; DATETIME: when it completes. Null: never. */
  timeoutAt: Date | null;
  /** RUN: the child run whose ending completes it. */
  childRunId: string | null;
  /** BATCH: the batch whose last run completes it. */
  batchId: string | null;
  /** SESSION: the session, and the channel whose next record completes it. */
  sessionId: string | null;
  channel: SessionChannel | null;
}

interface RunWaitRow {
  run_id: string;
  waitpoint_id: string;
  type: WaitpointType;
  timeout_at: Date | null;
  completed_by_run_id: string | null;
  completed_by_batch_id: string | null;
  session_id: string | null;
  io: SessionChannel | null;
}

/**
 * What each of the given runs waits on, in the order it began waiting; a run that is not WAITING
 * (or whose waits have all completed and only its resume is pending) waits on nothing and is left
 * out. A run waits on the waitpoints of its ledger's unresolved entries of the current attempt
 * (or keyed, which outlive attempts); a completion resolves them in the same statement that
 * completes the waitpoint. One statement for any number of runs (a page of a run list).
 */
export async function waitsOfRuns(db: Queryable, runIds: readonly string[]): Promise<Map<string, RunWait[]>> {
  const waits = new Map<string, RunWait[]>();
  if (runIds.length === 0) return waits;
  const { rows } = await db.query<RunWaitRow>(
    `SELECT l.run_id, w.id AS waitpoint_id, w.type, w.timeout_at, w.completed_by_run_id, w.completed_by_batch_id, sw.session_id, sw.io
     FROM runs r
     JOIN run_ledger l ON l.run_id = r.id AND l.epoch IN (r.ledger_epoch, ${KEYED_EPOCH}) AND NOT l.resolved
     JOIN waitpoints w ON w.id = l.waitpoint_id AND w.status = 'WAITING'
     LEFT JOIN session_waits sw ON sw.waitpoint_id = w.id
     WHERE r.id = ANY($1::text[]) AND r.status = 'WAITING'
     ORDER BY l.run_id, l.created_at, l.step_key`,
    [runIds],
  );
  for (const row of rows) {
    const wait: RunWait = {
      waitpointId: row.waitpoint_id,
      type: row.type,
      timeoutAt: row.timeout_at,
      childRunId: row.completed_by_run_id,
      batchId: row.completed_by_batch_id,
      sessionId: row.session_id,
      channel: row.io,
    };
    const list = waits.get(row.run_id);
    if (list) list.push(wait);
    else waits.set(row.run_id, [wait]);
  }
  return waits;
}
