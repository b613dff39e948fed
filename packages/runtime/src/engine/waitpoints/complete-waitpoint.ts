import { createHash } from "node:crypto";
import { preparedText, type Queryable } from "../../db/queryable.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import type { WaitpointRow } from "./store.ts";

/** How a wait ended, as recorded in the ledger and handed back to the waiting code. */
export interface WaitOutcome {
  ok: boolean;
  /** Serialised output (see outputType), absent when there is none. */
  output?: string | null;
  outputType?: string | null;
  /** Present when ok is false (a timeout, a failed child run). */
  error?: { name?: string; message: string; code?: string };
  /** For RUN waitpoints: the child run that finished. */
  runId?: string;
}

export type CompleteResult = { changed: true; waitpoint: WaitpointRow; resumedRunIds: string[] } | { changed: false; waitpoint: WaitpointRow | null };

/**
 * Completes (or times out) a waitpoint inside the caller's transaction: first writer wins.
 *
 * Two statements on purpose (resume-spike pitfall 5): the guarded UPDATE of the waitpoint waits
 * behind a waiter that holds it FOR SHARE; the ledger UPDATE then runs with a fresh snapshot and
 * sees the row that waiter committed. Resume jobs and the fast-path NOTIFY commit with the caller:
 * the runs resume if and only if the transaction commits.
 */
export async function completeWaitpoint(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  waitpointId: string,
  outcome: WaitOutcome,
  options: { environmentId?: string; status?: "COMPLETED" | "TIMED_OUT"; type?: string } = {},
): Promise<CompleteResult> {
  const now = deps.clock.now();
  const status = options.status ?? (outcome.ok ? "COMPLETED" : "TIMED_OUT");
  const values: unknown[] = [waitpointId, status, now, outcome.ok ? (outcome.output ?? null) : JSON.stringify(outcome.error ?? {}), outcome.ok ? (outcome.outputType ?? null) : "application/json", !outcome.ok];
  let envFilter = "";
  if (options.environmentId) {
    values.push(options.environmentId);
    envFilter = ` AND environment_id = $${values.length}`;
  }
  if (options.type) {
    values.push(options.type);
    envFilter += ` AND type = $${values.length}`;
  }
  const updated = await tx.query<WaitpointRow>(preparedText(
    `UPDATE waitpoints SET status = $2, completed_at = $3, output = $4, output_type = $5, output_is_error = $6
     WHERE id = $1 AND status = 'WAITING'${envFilter} RETURNING *`,
    values,
  ));
  const waitpoint = updated.rows[0];
  if (!waitpoint) {
    const { rows } = await tx.query<WaitpointRow>(`SELECT * FROM waitpoints WHERE id = $1${options.environmentId ? " AND environment_id = $2" : ""}`, options.environmentId ? [waitpointId, options.environmentId] : [waitpointId]);
    return { changed: false, waitpoint: rows[0] ?? null };
  }
  const resumedRunIds = await resolveLedgerAndResume(deps, tx, waitpointId, outcome, now);
  return { changed: true, waitpoint, resumedRunIds };
}

/** Records the outcome on every ledger entry waiting on the waitpoint and wakes their runs. */
async function resolveLedgerAndResume(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  waitpointId: string,
  outcome: WaitOutcome,
  now: Date,
): Promise<string[]> {
  // One statement resolves the entries, finds the WAITING runs and NOTIFYs the fast path
  // (delivered at COMMIT, so only if the caller commits), ≤ 100 run ids per payload.
  const { rows } = await tx.query<{ run_id: string; environment_id: string; queue_name: string; concurrency_key: string | null; limited: boolean }>(preparedText(
    `WITH resolved AS (
       UPDATE run_ledger SET resolved = true, outcome = $2, resolved_at = $3
       WHERE waitpoint_id = $1 AND NOT resolved RETURNING run_id),
     waiting AS (
       SELECT DISTINCT r.id AS run_id, r.environment_id, r.queue_name, r.concurrency_key,
         EXISTS (${LIMITED_QUEUE_SQL}) AS limited
       FROM resolved JOIN runs r ON r.id = resolved.run_id WHERE r.status = 'WAITING'),
     notified AS (
       -- Runs of a queue with a concurrencyLimit resume through that queue (to take a slot), not the fast path.
       SELECT pg_notify($4, environment_id || ' ' || $1 || ' ' || string_agg(run_id, ',')) FROM (
         SELECT run_id, environment_id, (row_number() OVER (PARTITION BY environment_id ORDER BY run_id) - 1) / 100 AS chunk
         FROM waiting WHERE NOT limited) c
       GROUP BY environment_id, chunk)
     SELECT waiting.*, (SELECT count(*) FROM notified) AS notifications FROM waiting`,
    [waitpointId, JSON.stringify(outcome), now, CHANNELS.resume],
  ));
  const waiting = rows;
  if (waiting.length === 0) return [];
  await deps.dispatcher.dispatch(
    tx,
    waiting.map((r) => ({
      kind: "resume" as const,
      runId: r.run_id,
      environmentId: r.environment_id,
      queueName: r.queue_name,
      concurrencyKey: r.concurrency_key,
      throughQueue: r.limited,
      // Deterministic, so the worker that takes the fast path can delete this backstop job.
      jobId: resumeJobId(r.run_id, waitpointId),
      // The durable backstop: runs only if no worker took the fast path first.
      ...(r.limited ? {} : { startAfterSeconds: RESUME_BACKSTOP_SECONDS }),
    })),
  );
  return waiting.map((r) => r.run_id);
}

/** How long the pg-boss resume job waits before it backs up the NOTIFY fast path. */
export const RESUME_BACKSTOP_SECONDS = 2;

/** Parses a resume NOTIFY payload: `<environmentId> <waitpointId> <runId>,<runId>,…` (at most 100 runs each). */
export function parseResumePayload(payload: string): { environmentId: string; waitpointId: string; runIds: string[] } | null {
  const [environmentId, waitpointId, runs] = payload.split(" ");
  if (!environmentId || !waitpointId || !runs) return null;
  return { environmentId, waitpointId, runIds: runs.split(",").filter(Boolean) };
}

/** The pg-boss id of the backstop job that resumes `runId` after `waitpointId` completed (a UUID from SHA-1). */
export function resumeJobId(runId: string, waitpointId: string): string {
  const h = createHash("sha1").update(`resume:${runId}:${waitpointId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}


/**
 * True (inside EXISTS, for a run aliased `r`) when the run's queue has a concurrencyLimit, as its
 * workers registered it. Such runs take a queue slot to resume, like a start.
 */
export const LIMITED_QUEUE_SQL = `SELECT 1 FROM worker_tasks wt
  WHERE wt.environment_id = r.environment_id AND wt.queue_name = r.queue_name AND wt.concurrency_limit IS NOT NULL`;
