import { prepared, type Queryable } from "../../db/queryable.ts";
import { keysetTimeSql, type Keyset } from "./keyset.ts";

export interface WaitpointBatchInput {
  environmentId: string;
  /** Waitpoints completed (or timed out) before this are old enough. */
  cutoff: Date;
  now: Date;
  after: Keyset;
  limit: number;
}

export interface WaitpointBatchResult {
  examined: number;
  waitpoints: number;
  next: Keyset | null;
}

/**
 * One statement: looks at the next `limit` waitpoints of the environment that completed or timed
 * out before the cutoff (waitpoints_completed, in completion order) and deletes those whose
 * idempotency key no longer answers (none, retired, or past its TTL) and that no run waits on (an
 * unresolved ledger entry: none is left once a waitpoint completes, checked all the same). A
 * waitpoint locked by a waiter recording its wait (FOR SHARE) is skipped until the next sweep.
 * Its session_waits row goes with it (cascade). Ledger rows of runs still kept keep their outcome
 * and the id of the waitpoint they waited on.
 */
const DELETE_WAITPOINT_BATCH = `
WITH examined AS (
  SELECT id, completed_at FROM waitpoints
  WHERE environment_id = $1 AND status <> 'WAITING' AND completed_at < $2 AND (completed_at, id) > ($3::timestamptz, $4::text)
  ORDER BY completed_at, id LIMIT $5),
doomed AS (
  SELECT w.id FROM waitpoints w JOIN examined USING (id)
  WHERE w.status <> 'WAITING'
    AND (w.idempotency_key IS NULL OR w.idempotency_key_expires_at <= $6)
    AND NOT EXISTS (SELECT 1 FROM run_ledger l WHERE l.waitpoint_id = w.id AND NOT l.resolved)
  FOR UPDATE OF w SKIP LOCKED),
deleted AS (DELETE FROM waitpoints WHERE id IN (SELECT id FROM doomed) RETURNING 1),
last AS (SELECT ${keysetTimeSql("completed_at")} AS at, id FROM examined ORDER BY completed_at DESC, id DESC LIMIT 1)
SELECT (SELECT count(*) FROM examined)::int AS examined, (SELECT count(*) FROM deleted)::int AS waitpoints,
       (SELECT at FROM last) AS last_at, (SELECT id FROM last) AS last_id`;

export async function deleteWaitpointBatch(db: Queryable, input: WaitpointBatchInput): Promise<WaitpointBatchResult> {
  const { rows } = await db.query<{ examined: number; waitpoints: number; last_at: string | null; last_id: string | null }>(
    prepared("svc_retention_waitpoints", DELETE_WAITPOINT_BATCH, [input.environmentId, input.cutoff, input.after.at, input.after.id, input.limit, input.now]),
  );
  const row = rows[0]!;
  const next = row.examined === input.limit && row.last_at !== null && row.last_id !== null ? { at: row.last_at, id: row.last_id } : null;
  return { examined: row.examined, waitpoints: row.waitpoints, next };
}
