import { withTransaction } from "../../db/queryable.ts";
import { resolveTime } from "../../durations.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { getRun, type RunRow } from "./store.ts";

// A DELAYED run's due time moved (runs.reschedule). Not a status change: the run stays DELAYED,
// with a new `delay_until`. What this relies on in whatever makes delayed runs due (today
// transitions/fire-delayed.ts and the `delayed-runs` timer of timers/fire-due.ts):
// - a run is due when `status = 'DELAYED' AND delay_until <= now`, read at the moment it fires,
//   and the timer's next wake-up is `min(delay_until)` over DELAYED runs;
// - whatever fires it locks the row (FOR UPDATE SKIP LOCKED) and re-checks `status = 'DELAYED'`
//   in its UPDATE, so this update and the firing serialize on the row lock: either the run fires
//   at its old time and this update then finds it QUEUED (and refuses), or this update commits
//   first and the firing no longer finds it due;
// - a TTL counts from the end of the delay (`expire_at = delay_until + ttl`, plan-run.ts), so
//   `expire_at` moves with `delay_until`;
// - a `svc_timers` NOTIFY with the new due time (ISO) wakes timer loops that planned to sleep past it.

/** The new due time of a rescheduled run: a duration from `now` or a date, later than `now`. */
export function rescheduledTime(delay: string | Date, now: Date): Date {
  const at = resolveTime(delay, now, "delay");
  if (at.getTime() <= now.getTime()) {
    const shown = delay instanceof Date ? delay.toISOString() : delay;
    throw new ValidationError(`Invalid delay: ${shown} is not in the future`);
  }
  return at;
}

const RESCHEDULE_SQL = `UPDATE runs SET delay_until = $3,
           expire_at = CASE WHEN expire_at IS NULL THEN NULL ELSE $3::timestamptz + (expire_at - delay_until) END,
           updated_at = $4
         WHERE id = $1 AND environment_id = $2 AND status = 'DELAYED' AND delay_until IS NOT NULL
         RETURNING *`;

/**
 * Moves a DELAYED run's due time to `delay` (a duration from now, or a later date). The run is
 * returned as it is now. A run of another status is refused with a 400, as Trigger.dev does
 * ("Cannot reschedule a run that is not delayed"); an unknown run is a 404.
 */
export async function rescheduleRun(deps: Pick<EngineDeps, "db" | "clock">, environmentId: string, runId: string, delay: string | Date): Promise<RunRow> {
  const now = deps.clock.now();
  const delayUntil = rescheduledTime(delay, now);
  return withTransaction(deps.db, async (tx) => {
    const { rows } = await tx.query<RunRow>(RESCHEDULE_SQL, [runId, environmentId, delayUntil, now]);
    const run = rows[0];
    if (!run) {
      const current = await getRun(tx, runId, environmentId);
      if (!current) throw new NotFoundError("Run not found");
      throw new ValidationError(`Cannot reschedule a run that is not delayed: ${runId} is ${current.status}`);
    }
    await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.timers, delayUntil.toISOString()]);
    return run;
  });
}
