import { flushWal, isPool, prepared, retryOnConflict, type Queryable } from "../../db/queryable.ts";
import { CHANNELS } from "../channels.ts";
import { RESUME_OFFERS_PARAMETER, SEND_OFFERS } from "./resume-offers.ts";
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
  /** For SESSION waitpoints: the `.out` records the waiting run had appended (see session_waits). */
  outAppended?: number;
}

export type CompleteResult = { changed: true; waitpoint: WaitpointRow; resumedRunIds: string[] } | { changed: false; waitpoint: WaitpointRow | null };

/**
 * Completes (or times out) a waitpoint inside the caller's transaction, first writer wins, in
 * one round trip (the `svc_complete_waitpoint` function): the guarded update, the ledger entries
 * waiting on it resolved, their WAITING runs offered to a worker or marked due for resume
 * (`runs.resume_due_at`: from then on any worker of their task claims them from `runs`) and a
 * NOTIFY that wakes the workers. The runs resume if and
 * only if the transaction commits. `tx` may also be a pool: the call is then its own transaction.
 */
export async function completeWaitpoint(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  waitpointId: string,
  outcome: WaitOutcome,
  options: { environmentId?: string; status?: "COMPLETED" | "TIMED_OUT"; type?: string } = {},
): Promise<CompleteResult> {
  const now = deps.clock.now();
  const status = options.status ?? (outcome.ok ? "COMPLETED" : "TIMED_OUT");
  const onPool = isPool(tx);
  const complete = () => tx.query<WaitpointRow & { changed: boolean; resumed_run_ids: string[]; offers_sent: string; async_commit?: string }>(prepared(
    onPool ? "svc_complete_waitpoint_early" : "svc_complete_waitpoint",
    // On a pool the statement is its own transaction, committed without waiting for the WAL flush
    // (synchronous_commit off for this transaction only): see flushWal below.
    `SELECT c.changed, c.resumed_run_ids, (c.waitpoint).*, offers.sent AS offers_sent${onPool ? ", set_config('synchronous_commit', 'off', true) AS async_commit" : ""}
     FROM svc_complete_waitpoint($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) AS c, LATERAL ${SEND_OFFERS} AS offers`,
    [
      waitpointId,
      status,
      now,
      outcome.ok ? (outcome.output ?? null) : JSON.stringify(outcome.error ?? {}),
      outcome.ok ? (outcome.outputType ?? null) : "application/json",
      !outcome.ok,
      options.environmentId ?? null,
      options.type ?? null,
      JSON.stringify(outcome),
      CHANNELS.resume,
      CHANNELS.runsReady,
      RESUME_OFFERS_PARAMETER,
    ],
  ));
  // On a pool the call is its own transaction, run again if a deadlock aborted it (a cancel of a
  // waiting run locks the run, then its ledger rows: the reverse of this order).
  const { rows } = await (onPool ? retryOnConflict(complete) : complete());
  // Early wake-up: the commit above is visible, and its NOTIFY already on its way to the workers,
  // before its WAL is on disk, so the resume overlaps the flush instead of waiting for it. This
  // returns (and the API answers) only once the completion is durable. Nothing can outlive a crash
  // that loses it: every write of the resumed run commits after it in the WAL, and flushing any of
  // them flushes the completion first. Also when nothing changed: the completion this call found
  // may be another caller's, still on its way to disk.
  if (onPool) await flushWal(tx);
  const { changed, resumed_run_ids, offers_sent: _sent, async_commit: _, ...waitpoint } = rows[0]!;
  if (!changed) return { changed: false, waitpoint: waitpoint.id === null ? null : waitpoint };
  return { changed: true, waitpoint, resumedRunIds: resumed_run_ids };
}

/** Parses a resume NOTIFY payload: `<environmentId> <waitpointId> <runId>,<runId>,…` (at most 100 runs each). */
export function parseResumePayload(payload: string): { environmentId: string; waitpointId: string; runIds: string[] } | null {
  const [environmentId, waitpointId, runs] = payload.split(" ");
  if (!environmentId || !waitpointId || !runs) return null;
  return { environmentId, waitpointId, runIds: runs.split(",").filter(Boolean) };
}
