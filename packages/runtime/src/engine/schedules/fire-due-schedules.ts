import { withTransaction, type Queryable } from "../../db/queryable.ts";
import type { EngineDeps } from "../deps.ts";
import { triggerRunInTransaction } from "../runs/trigger.ts";
import { getEnvironment } from "../tenancy/environments.ts";
import type { DueWork } from "../timers/fire-due.ts";
import { dueAt } from "../timers/due-times.ts";
import { nextTick, planFire, upcomingTicks, UPCOMING_TICKS } from "./cron.ts";
import { advanceSchedule, claimDueSchedule, EARLIEST_NEXT_RUN_SQL, recordTick, setTickRun, type ScheduleRow } from "./store.ts";

/** What a scheduled run receives as its payload (Trigger.dev's ScheduledTaskPayload; dates as ISO strings). */
export interface ScheduledRunPayload {
  scheduleId: string;
  type: "IMPERATIVE" | "DECLARATIVE";
  /** The tick this run is for (not the moment it started). */
  timestamp: string;
  /** The previous tick that fired, absent for the first run. */
  lastTimestamp?: string;
  externalId?: string;
  timezone: string;
  /** The next ticks after this one. */
  upcoming: string[];
}

export type FireOutcome =
  | { kind: "fired"; scheduleId: string; tick: Date; runId: string; next: Date }
  /** The tick had fired before (a double fire); nothing was triggered. */
  | { kind: "already-fired"; scheduleId: string; tick: Date; next: Date }
  /** Nothing was due after all (e.g. the row was claimed with a stale next_run_at); only re-planned. */
  | { kind: "replanned"; scheduleId: string; next: Date }
  /** Triggering threw; the tick was skipped and the schedule moved on. */
  | { kind: "failed"; scheduleId: string; error: unknown; next: Date };

/** Pure: the payload of the run for `tick`. */
export function scheduledRunPayload(schedule: ScheduleRow, tick: Date, upcoming: Date[]): ScheduledRunPayload {
  return {
    scheduleId: schedule.id,
    type: schedule.type,
    timestamp: tick.toISOString(),
    ...(schedule.last_tick_at ? { lastTimestamp: schedule.last_tick_at.toISOString() } : {}),
    ...(schedule.external_id ? { externalId: schedule.external_id } : {}),
    timezone: schedule.timezone,
    upcoming: upcoming.map((d) => d.toISOString()),
  };
}

/**
 * Fires one claimed schedule inside `tx`: triggers exactly one run for the latest due tick and
 * moves `next_run_at` past `now`, both in the caller's transaction. Ticks missed while nothing ran
 * are skipped (see planFire). The schedule_ticks row makes a repeated tick a no-op.
 */
export async function fireSchedule(deps: Pick<EngineDeps, "clock" | "dispatcher">, tx: Queryable, schedule: ScheduleRow, now: Date): Promise<FireOutcome> {
  const plan = planFire(schedule.cron, schedule.timezone, schedule.next_run_at, now);
  if (!plan.tick) {
    await advanceSchedule(tx, schedule.id, schedule.next_run_at, plan.next, null);
    return { kind: "replanned", scheduleId: schedule.id, next: plan.next };
  }
  const env = await getEnvironment(tx, schedule.environment_id);
  if (!env) throw new Error(`environment ${schedule.environment_id} of schedule ${schedule.id} not found`);
  const firstTime = await recordTick(tx, schedule.id, plan.tick, now);
  if (!firstTime) {
    await advanceSchedule(tx, schedule.id, schedule.next_run_at, plan.next, null);
    return { kind: "already-fired", scheduleId: schedule.id, tick: plan.tick, next: plan.next };
  }
  const upcoming = [plan.next, ...upcomingTicks(schedule.cron, schedule.timezone, plan.next, UPCOMING_TICKS - 1)];
  const payload = scheduledRunPayload(schedule, plan.tick, upcoming);
  // superjson so the task receives real Dates (ScheduledTaskPayload); the API still shows ISO strings.
  const run = await triggerRunInTransaction(deps, tx, env, schedule.task_identifier, toDates(payload), { payloadType: "application/super+json" }, { scheduleId: schedule.id });
  await setTickRun(tx, schedule.id, plan.tick, run.id);
  await advanceSchedule(tx, schedule.id, schedule.next_run_at, plan.next, plan.tick);
  return { kind: "fired", scheduleId: schedule.id, tick: plan.tick, runId: run.id, next: plan.next };
}

/**
 * Claims the next due schedule (FOR UPDATE SKIP LOCKED) and fires it, in one transaction.
 * Returns null when nothing is due (or every due schedule is held by another process).
 *
 * If triggering fails, that tick is skipped (the schedule still moves on, so a broken schedule
 * cannot block the others) and the error is returned for the caller to report.
 */
export async function fireNextDueSchedule(deps: EngineDeps, now: Date): Promise<FireOutcome | null> {
  return withTransaction(deps.db, async (tx) => {
    const schedule = await claimDueSchedule(tx, now);
    if (!schedule) return null;
    await tx.query("SAVEPOINT fire_schedule");
    try {
      const outcome = await fireSchedule(deps, tx, schedule, now);
      await tx.query("RELEASE SAVEPOINT fire_schedule");
      return outcome;
    } catch (error) {
      await tx.query("ROLLBACK TO SAVEPOINT fire_schedule");
      const next = safeNextTick(schedule, now);
      await advanceSchedule(tx, schedule.id, schedule.next_run_at, next, null);
      return { kind: "failed", scheduleId: schedule.id, error, next };
    }
  });
}

function safeNextTick(schedule: ScheduleRow, now: Date): Date {
  try {
    return nextTick(schedule.cron, schedule.timezone, now);
  } catch {
    return new Date(now.getTime() + 3_600_000);
  }
}

/**
 * Cron schedules as time-driven work for the worker's timer loop. Each schedule is claimed and
 * fired in its own transaction, so any number of processes can call this at once and a tick
 * triggers exactly one run. Failed ticks are reported after the others were handled.
 */
export const dueSchedules: DueWork = {
  name: "due-schedules",
  async fire(deps, now, limit, tally) {
    let handled = 0;
    const failures: Error[] = [];
    while (handled < limit) {
      const outcome = await fireNextDueSchedule(deps, now);
      if (!outcome) break;
      handled++;
      // Its own transaction has committed: the run exists.
      if (outcome.kind === "fired") tally?.triggered(1, "schedule");
      if (outcome.kind === "failed") {
        const reason = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
        failures.push(new Error(`schedule ${outcome.scheduleId}: tick skipped, trigger failed: ${reason}`, { cause: outcome.error }));
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} schedule ticks failed to trigger`);
    return handled;
  },
  ...dueAt(EARLIEST_NEXT_RUN_SQL),
};

function toDates(p: ScheduledRunPayload) {
  return {
    ...p,
    timestamp: new Date(p.timestamp),
    ...(p.lastTimestamp ? { lastTimestamp: new Date(p.lastTimestamp) } : {}),
    upcoming: p.upcoming.map((d) => new Date(d)),
  };
}
