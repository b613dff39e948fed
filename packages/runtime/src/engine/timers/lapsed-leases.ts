import { withTransaction } from "../../db/queryable.ts";
import { notifyWaitersOfRun } from "../runs/notify-waiters.ts";
import { maxAttemptsOf } from "../runs/retry-policy.ts";
import { crashLapsed, findLapsed, requeueLapsed } from "../runs/transitions/lapse.ts";
import { dispatchStarts, type DueWork } from "./fire-due.ts";
import { dueAt } from "./due-times.ts";

/** What a run whose every attempt crashed ends with (the worker's own crash check writes the same). */
export const WORKER_CRASHED_ERROR = {
  type: "internal",
  name: "WORKER_CRASHED",
  code: "WORKER_CRASHED",
  message: "The worker executing this run stopped responding too many times",
};

/** The attempt row of an attempt whose worker stopped responding. */
const CRASHED_ATTEMPT_ERROR = { name: "WorkerCrash", message: "The worker executing this attempt stopped responding" };

/**
 * Every execution holds a lease on its run that its worker renews. A run whose lease lapsed lost
 * its worker (kill -9, a crash, a stall, a Postgres outage longer than the lease): the attempt is
 * recorded as CRASHED and the run goes back to QUEUED to be started again — a new attempt that
 * replays the same ledger, so nothing recorded is lost. When that was its last attempt (the task's
 * maxAttempts, or the run's) the run ends CRASHED instead, and whoever waits on it is resumed: a
 * run that kills its worker every time is not restarted forever. A run offered to a worker holds
 * that worker's lease from the offer on: a worker that died or stalled with the offer unread loses
 * it the same way (its attempt counted: the lapse cannot tell it from a worker that crashed running
 * it, which must count, or a run that kills its worker at once would be restarted forever).
 */
export const lapsedLeases: DueWork = {
  name: "lapsed-leases",
  async fire(deps, now, limit, tally) {
    const { handled, crashed } = await withTransaction(deps.db, async (tx) => {
      const found = await findLapsed(tx, now, limit);
      // A lease left on a run that is no longer executing (written before cancel cleared leases)
      // would keep nextDue in the past: clear it.
      await tx.query(`UPDATE runs SET lease_expires_at = NULL WHERE lease_expires_at <= $1 AND status <> 'EXECUTING'`, [now]);
      if (found.length === 0) return { handled: 0, crashed: 0 };
      const lapsed = found;
      await tx.query(
        `INSERT INTO run_attempts (run_id, number, status, worker_id, worker_version, started_at, finished_at, error)
         SELECT id, attempt_number, 'CRASHED', worker_id, worker_version, updated_at, $2, $3 FROM runs WHERE id = ANY($1::text[])
         ON CONFLICT (run_id, number) DO NOTHING`,
        [lapsed.map((r) => r.id), now, CRASHED_ATTEMPT_ERROR],
      );
      const lastAttempt = (r: (typeof lapsed)[number]) => r.attempt_number >= maxAttemptsOf(r.retry ?? undefined, r.max_attempts);
      const requeued = await requeueLapsed(
        tx,
        lapsed.filter((r) => !lastAttempt(r)).map((r) => r.id),
        now,
      );
      await dispatchStarts(deps, tx, requeued, now);
      const crashed = await crashLapsed(tx, lapsed.filter(lastAttempt).map((r) => r.id), now, WORKER_CRASHED_ERROR);
      for (const run of crashed) await notifyWaitersOfRun(deps, tx, run);
      return { handled: found.length, crashed: crashed.length };
    });
    if (crashed > 0) tally?.finished("CRASHED", crashed);
    return handled;
  },
  // Only executions hold leases (every other transition clears it): the partial index alone
  // answers, where a filter on status made the planner scan the whole table.
  ...dueAt(`SELECT min(lease_expires_at) AS at FROM runs WHERE lease_expires_at IS NOT NULL`),
};
