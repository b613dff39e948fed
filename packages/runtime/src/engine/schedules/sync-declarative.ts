import type { Queryable } from "../../db/queryable.ts";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { nextTick, parseCron, parseTimezone } from "./cron.ts";
import { deleteDeclarativeSchedulesExcept, notifyTimers, upsertDeclarativeSchedule, type ScheduleRow } from "./store.ts";

/** A task's `cron` option as the worker found it (schedules.task({ id, cron })). */
export interface DeclaredSchedule {
  id: string;
  cron: string;
  /** @default "UTC" */
  timezone?: string | null;
}

export interface DeclarativeSyncResult {
  /** The DECLARATIVE schedules now in place, one per task. */
  schedules: ScheduleRow[];
  /** Ids of DECLARATIVE schedules removed because their task no longer declares a cron. */
  deleted: string[];
}

/**
 * Makes the environment's DECLARATIVE schedules match the tasks a worker loaded: one per task with
 * a cron (created, or redefined when its cron or timezone changed; an unchanged one keeps its next
 * tick), and none for tasks that no longer declare one. The worker calls this at start.
 *
 * Everything is validated before anything is written (422 naming the task). Pass a transaction
 * client as `db` to apply it atomically; each statement is idempotent, so a crash part-way is
 * repaired by the next start.
 */
export async function syncDeclarativeSchedules(
  db: Queryable,
  environmentId: string,
  tasks: DeclaredSchedule[],
  now: Date,
): Promise<DeclarativeSyncResult> {
  const seen = new Set<string>();
  const declared = tasks.map((task) => {
    if (seen.has(task.id)) throw new ValidationError(`schedules.task("${task.id}") is declared twice`);
    seen.add(task.id);
    try {
      return { task: task.id, cron: parseCron(task.cron), timezone: parseTimezone(task.timezone) };
    } catch (error) {
      throw new UnprocessableError(`schedules.task("${task.id}"): ${(error as Error).message}`);
    }
  });

  const schedules: ScheduleRow[] = [];
  for (const d of declared) {
    schedules.push(
      await upsertDeclarativeSchedule(db, { ...d, id: newId.schedule(), environmentId, nextRunAt: nextTick(d.cron, d.timezone, now), now }),
    );
  }
  const deleted = await deleteDeclarativeSchedulesExcept(db, environmentId, [...seen]);
  const earliest = schedules.reduce<Date | null>((min, s) => (min === null || s.next_run_at < min ? s.next_run_at : min), null);
  if (earliest) await notifyTimers(db, earliest);
  return { schedules, deleted };
}
