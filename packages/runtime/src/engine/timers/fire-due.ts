import { withTransaction, type Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint } from "../waitpoints/complete-waitpoint.ts";
import type { RunRow } from "../runs/store.ts";
import { NO_RUN_TALLY, type RunTally } from "../runs/run-tally.ts";
import { notifyWaitersOfRun } from "../runs/notify-waiters.ts";
import { expiredUploads } from "../packets/expired-uploads.ts";
import { fireDelayed } from "../runs/transitions/fire-delayed.ts";
import { expireDue } from "../runs/transitions/expire.ts";
import { dueAt } from "./due-times.ts";
import type { DueWork } from "./due-work.ts";

export type { DueWork };
import { startRuns } from "../runs/start-runs.ts";

/** Starts runs a timer just made runnable (in the same transaction): see startRuns. */
export async function dispatchStarts(deps: Pick<EngineDeps, "dispatcher">, tx: Queryable, runs: RunRow[], now: Date): Promise<void> {
  await startRuns(deps, tx, runs, now);
}

/** DELAYED runs whose delay passed become QUEUED and are enqueued. */
export const delayedRuns: DueWork = {
  name: "delayed-runs",
  async fire(deps, now, limit) {
    return withTransaction(deps.db, async (tx) => {
      const rows = await fireDelayed(tx, now, limit);
      await dispatchStarts(deps, tx, rows, now);
      return rows.length;
    });
  },
  ...dueAt(`SELECT min(delay_until) AS at FROM runs WHERE delay_until IS NOT NULL AND status = 'DELAYED'`),
};

/** QUEUED runs waiting out a retry backoff are enqueued once it passed. */
export const retryingRuns: DueWork = {
  name: "retrying-runs",
  async fire(deps, now, limit) {
    return withTransaction(deps.db, async (tx) => {
      const { rows } = await tx.query<RunRow>(
        `UPDATE runs SET available_at = NULL, updated_at = $1
         WHERE id IN (SELECT id FROM runs WHERE status = 'QUEUED' AND available_at <= $1
                      ORDER BY available_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [now, limit],
      );
      await dispatchStarts(deps, tx, rows, now);
      return rows.length;
    });
  },
  ...dueAt(`SELECT min(available_at) AS at FROM runs WHERE status = 'QUEUED' AND available_at IS NOT NULL`),
};

/**
 * Runs not started before their TTL become EXPIRED (and free their idempotency key). A due
 * `expire_at` of a run that left the queue another way (canceled) is cleared, so the index of
 * pending expiries holds only runs that may still expire. A parent waiting on an expired run
 * (triggerAndWait, batchTriggerAndWait) is resumed in the same transaction, as for any other end.
 */
export const expiringRuns: DueWork = {
  name: "expiring-runs",
  async fire(deps, now, limit, tally) {
    const { handled, expired } = await withTransaction(deps.db, async (tx) => {
      const due = await expireDue(tx, now, limit);
      // The waiters need only ids, statuses, output and error.
      for (const run of due.awaited) await notifyWaitersOfRun(deps, tx, run);
      return due;
    });
    if (expired > 0) tally?.finished("EXPIRED", expired);
    return handled;
  },
  ...dueAt(`SELECT min(expire_at) AS at FROM runs WHERE expire_at IS NOT NULL`),
};

/** Waitpoints whose time came: DATETIME ones complete, MANUAL tokens time out. */
export const dueWaitpoints: DueWork = {
  name: "due-waitpoints",
  async fire(deps, now, limit) {
    return withTransaction(deps.db, async (tx) => {
      const { rows } = await tx.query<{ id: string; type: string; timeout_at: Date }>(
        `SELECT id, type, timeout_at FROM waitpoints WHERE status = 'WAITING' AND timeout_at <= $1
         ORDER BY timeout_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [now, limit],
      );
      for (const w of rows) {
        if (w.type === "DATETIME") {
          await completeWaitpoint(deps, tx, w.id, { ok: true, output: JSON.stringify({ date: w.timeout_at.toISOString() }), outputType: "application/json" });
        } else {
          await completeWaitpoint(deps, tx, w.id, {
            ok: false,
            error: { name: "WaitpointTimeoutError", code: "WAITPOINT_TIMEOUT", message: `Waitpoint timed out at ${w.timeout_at.toISOString()}` },
          });
        }
      }
      return rows.length;
    });
  },
  ...dueAt(`SELECT min(timeout_at) AS at FROM waitpoints WHERE status = 'WAITING' AND timeout_at IS NOT NULL`),
};

// Due resumes come after due waitpoints, so a timeout's resume through a limited queue is handed
// over in the same pass.
export const BUILT_IN_DUE_WORK: DueWork[] = [delayedRuns, retryingRuns, expiringRuns, dueWaitpoints, expiredUploads];

/**
 * Fires everything due at `now` until nothing is left; returns the count per kind. `tally` hears
 * of the runs the work created and ended (the worker's timer loop passes its metrics' tally).
 * Once `signal` is aborted no further work starts (and long work stops between its transactions).
 */
export async function fireAllDue(
  deps: EngineDeps,
  now: Date,
  work: DueWork[] = BUILT_IN_DUE_WORK,
  options: { limit?: number; tally?: RunTally; signal?: AbortSignal } = {},
): Promise<Record<string, number>> {
  const limit = options.limit ?? 500;
  const tally = options.tally ?? NO_RUN_TALLY;
  const counts: Record<string, number> = {};
  const errors: unknown[] = [];
  for (const w of work) {
    if (options.signal?.aborted) break;
    let total = 0;
    try {
      for (;;) {
        const n = await w.fire(deps, now, limit, tally, options.signal);
        total += n;
        if (n < limit || options.signal?.aborted) break;
      }
    } catch (error) {
      // One kind of work failing (the database refusing one of its statements, say) must not
      // stop the others: token timeouts still fire while delayed runs cannot be started.
      errors.push(new Error(`${w.name}: ${(error as Error)?.message ?? String(error)}`, { cause: error }));
    }
    counts[w.name] = total;
  }
  if (errors.length > 0) throw new AggregateError(errors, errors.map((e) => (e as Error).message).join("; "));
  return counts;
}
