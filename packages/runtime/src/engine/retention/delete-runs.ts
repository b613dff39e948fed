import { prepared, type Queryable } from "../../db/queryable.ts";
import { FINAL_STATUSES, FREES_IDEMPOTENCY_KEY } from "../runs/statuses.ts";
import { keysetTimeSql, type Keyset } from "./keyset.ts";

/** One batch of the runs sweep: which runs to look at, and when a run is old enough. */
export interface RunBatchInput {
  environmentId: string;
  /** Runs created and finished before this are old enough (now − the retention period). */
  cutoff: Date;
  /** What "still valid" means for idempotency keys. */
  now: Date;
  /** The last run the previous batch looked at. */
  after: Keyset;
  /** How many runs to look at. */
  limit: number;
}

export interface RunBatchResult {
  /** Runs looked at (old enough by creation), whether deleted or kept. */
  examined: number;
  runs: number;
  attempts: number;
  batches: number;
  /** Where the next batch starts; null when this one looked at the last old run. */
  next: Keyset | null;
}

/**
 * One statement, one transaction: looks at the next `limit` runs of the environment created
 * before the cutoff (runs_list, in creation order from `after`: a run that finished before the
 * cutoff was created before it, so no index on finished_at is needed, which would cost every
 * finishing update its HOT update), and deletes those that finished before the cutoff and that
 * nothing still needs:
 *
 * - an idempotency key that still answers triggers (not past its TTL, on a run whose status keeps it);
 * - a run waiting on it (an unresolved ledger entry on the waitpoint the run completes);
 * - its batch, or a batch it answered an item of, still going: a run not final, a waiter on the
 *   batch's waitpoint, or the batch itself younger than the cutoff (a batch completes from all of
 *   its runs at once);
 * - an active session whose current run it is.
 *
 * With each run go its attempts, its ledger (the foreign key's cascade, measured 18 % faster than
 * a DELETE of the batch's ledger rows beside it, after which the cascade looks for them again),
 * its session_runs rows, its log (run_logs, run_log_totals), and its batches (its own and those it answered items of: a batch lives as
 * long as its first deleted run, so a repeated batch idempotency key starts a new batch rather
 * than finding one whose runs are gone). Runs kept (and runs locked by someone else: SKIP LOCKED) are looked at
 * again by the next sweep; runs that are not old enough yet are not looked at at all.
 *
 * Each check is a LATERAL lookup with LIMIT 1 (OFFSET 0 where every row is wanted), so that it
 * stays a probe of its index per run or batch whatever the statistics say: as plain EXISTS, over
 * tables not analyzed yet, the planner hashed every unfinished run of the database for the batch
 * check and joined every run of every open session for the session check (540 ms for a batch of
 * 1,000 over 240,000 runs, against 40 ms).
 */
const DELETE_RUN_BATCH = `
WITH examined AS (
  SELECT id, created_at FROM runs
  WHERE environment_id = $1 AND created_at < $2 AND (created_at, id) > ($3::timestamptz, $4::text)
  ORDER BY created_at, id LIMIT $5),
candidates AS (
  SELECT r.id, r.batch_id FROM runs r JOIN examined USING (id)
  WHERE r.status = ANY($6::text[]) AND coalesce(r.finished_at, r.updated_at) < $2
    AND (r.idempotency_key IS NULL OR r.idempotency_key_expires_at <= $7 OR r.status = ANY($8::text[]))),
batches_in_play AS (
  SELECT batch_id FROM candidates WHERE batch_id IS NOT NULL
  UNION
  SELECT m.batch_id FROM candidates c CROSS JOIN LATERAL (SELECT batch_id FROM batch_members WHERE run_id = c.id OFFSET 0) m),
busy AS (
  SELECT p.batch_id FROM batches_in_play p
    CROSS JOIN LATERAL (SELECT 1 FROM runs o WHERE o.batch_id = p.batch_id AND o.status <> ALL($6::text[]) LIMIT 1) unfinished
  UNION
  SELECT p.batch_id FROM batches_in_play p
    CROSS JOIN LATERAL (
      SELECT 1 FROM batch_members m JOIN runs o ON o.id = m.run_id WHERE m.batch_id = p.batch_id AND o.status <> ALL($6::text[]) LIMIT 1) unfinished
  UNION
  SELECT p.batch_id FROM batches_in_play p
    CROSS JOIN LATERAL (SELECT 1 FROM waitpoints w WHERE w.completed_by_batch_id = p.batch_id AND w.status = 'WAITING' LIMIT 1) awaited
  UNION
  SELECT p.batch_id FROM batches_in_play p JOIN batches b ON b.id = p.batch_id WHERE b.created_at >= $2),
held AS (
  SELECT c.id FROM candidates c WHERE c.batch_id IN (SELECT batch_id FROM busy)
  UNION
  SELECT c.id FROM candidates c
    CROSS JOIN LATERAL (SELECT 1 FROM batch_members m WHERE m.run_id = c.id AND m.batch_id IN (SELECT batch_id FROM busy) LIMIT 1) member
  UNION
  SELECT c.id FROM candidates c
    CROSS JOIN LATERAL (
      SELECT 1 FROM waitpoints w JOIN run_ledger l ON l.waitpoint_id = w.id AND NOT l.resolved WHERE w.completed_by_run_id = c.id LIMIT 1) waited_on
  UNION
  SELECT c.id FROM candidates c
    CROSS JOIN LATERAL (SELECT session_id FROM session_runs WHERE run_id = c.id OFFSET 0) sr
    CROSS JOIN LATERAL (
      SELECT 1 FROM sessions s
      WHERE s.id = sr.session_id AND s.current_run_id = c.id AND s.closed_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > $7) LIMIT 1) current),
doomed AS (
  SELECT r.id, r.batch_id, r.tags, r.created_at FROM runs r JOIN candidates c USING (id)
  WHERE NOT EXISTS (SELECT 1 FROM held WHERE held.id = c.id)
  FOR UPDATE OF r SKIP LOCKED),
deleted_attempts AS (DELETE FROM run_attempts WHERE run_id IN (SELECT id FROM doomed) RETURNING 1),
deleted_session_runs AS (DELETE FROM session_runs WHERE run_id IN (SELECT id FROM doomed)),
deleted_logs AS (DELETE FROM run_logs WHERE run_id IN (SELECT id FROM doomed)),
deleted_log_totals AS (DELETE FROM run_log_totals WHERE run_id IN (SELECT id FROM doomed)),
deleted_tags AS (
  DELETE FROM run_tags t USING doomed d CROSS JOIN LATERAL unnest(d.tags) AS dt(tag)
  WHERE t.environment_id = $1 AND t.tag = dt.tag AND t.created_at = d.created_at AND t.run_id = d.id),
deleted_batches AS (
  DELETE FROM batches WHERE id IN (
    SELECT batch_id FROM doomed WHERE batch_id IS NOT NULL
    UNION SELECT m.batch_id FROM doomed d CROSS JOIN LATERAL (SELECT batch_id FROM batch_members WHERE run_id = d.id OFFSET 0) m)
  RETURNING 1),
deleted_runs AS (DELETE FROM runs WHERE id IN (SELECT id FROM doomed) RETURNING 1),
last AS (SELECT ${keysetTimeSql("created_at")} AS at, id FROM examined ORDER BY created_at DESC, id DESC LIMIT 1)
SELECT (SELECT count(*) FROM examined)::int AS examined, (SELECT count(*) FROM deleted_runs)::int AS runs,
       (SELECT count(*) FROM deleted_attempts)::int AS attempts,
       (SELECT count(*) FROM deleted_batches)::int AS batches, (SELECT at FROM last) AS last_at, (SELECT id FROM last) AS last_id`;

/** Looks at the next batch of old runs and deletes those nothing needs (see DELETE_RUN_BATCH). */
export async function deleteRunBatch(db: Queryable, input: RunBatchInput): Promise<RunBatchResult> {
  const { rows } = await db.query<Omit<RunBatchResult, "next"> & { last_at: string | null; last_id: string | null }>(
    prepared("svc_retention_runs", DELETE_RUN_BATCH, [
      input.environmentId,
      input.cutoff,
      input.after.at,
      input.after.id,
      input.limit,
      FINAL_STATUSES,
      input.now,
      FREES_IDEMPOTENCY_KEY,
    ]),
  );
  const row = rows[0]!;
  const next = row.examined === input.limit && row.last_at !== null && row.last_id !== null ? { at: row.last_at, id: row.last_id } : null;
  return { examined: row.examined, runs: row.runs, attempts: row.attempts, batches: row.batches, next };
}
