import { withTransaction, type Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import { cancelRunInTransaction } from "../runs/cancel.ts";
import { listRunsInTransaction } from "../runs/list.ts";
import { replayRunInTransaction } from "../runs/replay.ts";
import { isFinal } from "../runs/statuses.ts";
import type { RunRow } from "../runs/store.ts";
import { getEnvironment, type Environment } from "../tenancy/environments.ts";
import type { BulkActionStatus } from "./statuses.ts";
import { filtersOf, type BulkActionRow } from "./store.ts";

/** Runs per chunk (one transaction each). */
export const BULK_ACTION_CHUNK_SIZE = 100;

/** A run of a chunk that could not be canceled or replayed for an error (counted as failed). */
export interface BulkRunFailure {
  bulkActionId: string;
  runId: string;
  error: unknown;
}

/** What one chunk did, once its transaction committed. */
export interface ChunkResult {
  bulkActionId: string;
  /** Runs of the set the chunk handled (succeeded + failed). */
  handled: number;
  succeeded: number;
  failed: number;
  /** The action's status after the chunk: COMPLETED when it was the last. */
  status: BulkActionStatus;
  /** Runs the chunk's cancels ended (the runs and their unfinished descendants). */
  canceledRuns: number;
  /** Runs the chunk's replays created. */
  replayedRuns: number;
  failures: BulkRunFailure[];
}

/**
 * Works through the next chunk of the pending bulk action whose last chunk is oldest, in one
 * transaction: the action's row is locked (FOR UPDATE SKIP LOCKED: another process working on it
 * is passed by, so two never work on one action at once), the chunk's runs are read after its
 * cursor, each is canceled (cancel.ts) or replayed (replay.ts), and the cursor and counts move
 * past them with a guarded UPDATE, all committed together or not at all: a crash mid-chunk leaves
 * the chunk to be done again from the same cursor, and a committed chunk is never read again.
 * An abort (store.ts abortPendingBulkAction) waits for the row, so the chunk after it never starts.
 *
 * Per run: a cancel succeeds when it canceled the run (a run already finished is a failure, as in
 * Trigger.dev); a replay succeeds when it created the new run. A run whose cancel or replay throws
 * is rolled back to a savepoint and counted as failed (in `failures`), except for a lock conflict,
 * lock timeout or lost connection, which fail the whole chunk, to be done again.
 * Null when no action is pending (or every pending one is being worked on elsewhere).
 */
export async function processNextChunk(deps: EngineDeps, options: { chunkSize?: number } = {}): Promise<ChunkResult | null> {
  const chunkSize = options.chunkSize ?? BULK_ACTION_CHUNK_SIZE;
  return withTransaction(deps.db, async (tx) => {
    await tx.query(`SET LOCAL lock_timeout = '5s'`);
    const { rows } = await tx.query<BulkActionRow>(
      `SELECT * FROM bulk_actions WHERE status = 'PENDING' ORDER BY updated_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    const action = rows[0];
    if (!action) return null;
    const env = await getEnvironment(tx, action.environment_id);
    if (!env) throw new Error(`bulk action ${action.id}: environment ${action.environment_id} not found`);
    const chunk = await nextChunk(tx, action, chunkSize);
    const result: ChunkResult = { bulkActionId: action.id, handled: 0, succeeded: 0, failed: chunk.missing, status: "PENDING", canceledRuns: 0, replayedRuns: 0, failures: [] };
    const touched: string[] = [];
    for (const run of chunk.runs) {
      await tx.query("SAVEPOINT bulk_action_run");
      try {
        const done = await applyTo(deps, tx, env, action, run, result, touched);
        await tx.query("RELEASE SAVEPOINT bulk_action_run");
        if (done) result.succeeded++;
        else result.failed++;
      } catch (error) {
        if (isTransient(error)) throw error;
        await tx.query("ROLLBACK TO SAVEPOINT bulk_action_run");
        result.failed++;
        result.failures.push({ bulkActionId: action.id, runId: run.id, error });
      }
    }
    result.handled = result.succeeded + result.failed;
    await recordTouchedRuns(tx, action, touched);
    const last = chunk.taken < chunkSize;
    const now = deps.clock.now();
    const { rows: updated } = await tx.query<{ status: BulkActionStatus }>(
      `UPDATE bulk_actions SET cursor_created_at = $3, cursor_run_id = $4, succeeded = succeeded + $5, failed = failed + $6,
         status = CASE WHEN $7 THEN 'COMPLETED' ELSE status END, completed_at = CASE WHEN $7 THEN $8::timestamptz END, updated_at = $8
       WHERE id = $1 AND status = 'PENDING' AND cursor_run_id IS NOT DISTINCT FROM $2
       RETURNING status`,
      [action.id, action.cursor_run_id, chunk.cursor.createdAt, chunk.cursor.runId, result.succeeded, result.failed, last, now],
    );
    // The row is locked by this transaction: nobody can have moved it. Never commit the effects without the cursor.
    if (updated.length === 0) throw new Error(`bulk action ${action.id} changed under its chunk's lock`);
    result.status = updated[0]!.status;
    return result;
  });
}

interface Chunk {
  runs: RunRow[];
  /** How many of the set the chunk took (a filter's rows, or ids, found or not). */
  taken: number;
  /** Ids of the chunk not found in the environment (failed). */
  missing: number;
  /** The cursor after the chunk (the one before, when it took nothing). */
  cursor: { createdAt: Date | null; runId: string | null };
}

/** The chunk after the action's cursor: a filter's next page in list order, or the next ids. */
async function nextChunk(tx: Queryable, action: BulkActionRow, size: number): Promise<Chunk> {
  const before = { createdAt: action.cursor_created_at, runId: action.cursor_run_id };
  if (action.filters) {
    const keyset = before.runId === null ? null : { sql: "(created_at, id) < ($1, $2)", values: [before.createdAt, before.runId] };
    const runs = await listRunsInTransaction(tx, [action.environment_id], filtersOf(action.filters), { keyset, direction: "desc", limit: size });
    const last = runs.at(-1);
    return { runs, taken: runs.length, missing: 0, cursor: last ? { createdAt: last.created_at, runId: last.id } : before };
  }
  const ids = action.run_ids!.filter((id) => before.runId === null || id > before.runId).slice(0, size);
  const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE environment_id = $1 AND id = ANY($2::text[]) ORDER BY id`, [action.environment_id, ids]);
  return { runs: rows, taken: ids.length, missing: ids.length - rows.length, cursor: ids.length > 0 ? { createdAt: null, runId: ids.at(-1)! } : before };
}

/**
 * Cancels or replays one run; whether it did. Adds the runs it touched to `touched`, as Trigger.dev
 * marks them: a cancel's run, also one already finished (a failure); a replay's new run.
 */
async function applyTo(deps: EngineDeps, tx: Queryable, env: Environment, action: BulkActionRow, run: RunRow, result: ChunkResult, touched: string[]): Promise<boolean> {
  if (action.action === "CANCEL") {
    if (isFinal(run.status)) {
      touched.push(run.id);
      return false;
    }
    const { canceledRunIds } = await cancelRunInTransaction(deps, tx, env.id, run.id);
    result.canceledRuns += canceledRunIds.length;
    touched.push(run.id);
    return canceledRunIds[0] === run.id;
  }
  const replay = await replayRunInTransaction(deps, tx, env, run);
  if (!replay.isCached) result.replayedRuns++;
  touched.push(replay.id);
  return true;
}

/**
 * The chunk's touched runs into bulk_action_runs (migration 0051), with their created_at, for the
 * run list's filter[bulkAction]: in the chunk's transaction, so a chunk done again after a crash
 * records them once. A run whose cancel or replay failed was rolled back and is not in `touched`.
 */
async function recordTouchedRuns(tx: Queryable, action: BulkActionRow, touched: string[]): Promise<void> {
  if (touched.length === 0) return;
  await tx.query(
    `INSERT INTO bulk_action_runs (environment_id, bulk_action_id, created_at, run_id)
     SELECT r.environment_id, $1, r.created_at, r.id FROM runs r WHERE r.id = ANY($2::text[]) AND r.environment_id = $3
     ON CONFLICT DO NOTHING`,
    [action.id, touched, action.environment_id],
  );
}

/**
 * Errors that say nothing about the run: a deadlock or serialization failure (class 40), a lock
 * timeout (55P03), a lost connection (08), a shutdown or cancel (57), no resources (53). The
 * chunk is done again rather than the run counted as failed.
 */
function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // A SQLSTATE is five digits or capitals (svc's own errors have codes such as "not_found").
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code === "55P03" || ["08", "40", "53", "57"].includes(code.slice(0, 2));
  // node-postgres's own errors for a connection that went away carry no SQLSTATE.
  const message = (error as Error | null)?.message ?? "";
  return /Connection terminated|connection is closed|Client has encountered a connection error/i.test(message);
}
