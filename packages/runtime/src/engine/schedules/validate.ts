import type { Queryable } from "../../db/queryable.ts";
import { UnprocessableError } from "../../errors.ts";
import { parseCron, parseTimezone } from "./cron.ts";
import { findRegisteredTask, type ScheduleDefinition, type ScheduleRow } from "./store.ts";

/** What an imperative create or update asks for, before validation. */
export interface ScheduleInput {
  task: string;
  cron: string;
  timezone?: string | null;
  externalId?: string | null;
}

/**
 * Checks an imperative schedule in Trigger.dev's order: cron, timezone, then the task, which must
 * be registered by a worker of this environment and declared with `schedules.task`. 422 on failure.
 */
export async function validateScheduleInput(db: Queryable, environmentId: string, input: ScheduleInput): Promise<ScheduleDefinition> {
  const cron = parseCron(input.cron);
  const timezone = parseTimezone(input.timezone);
  const registered = await findRegisteredTask(db, environmentId, input.task);
  if (!registered) {
    throw new UnprocessableError(
      `Task with identifier ${input.task} not found in this environment. Start a worker that has the task (declared with schedules.task) first.`,
    );
  }
  if (registered.kind !== "SCHEDULED") {
    throw new UnprocessableError(
      `Task with identifier ${input.task} is not a scheduled task. Declare it with schedules.task() to attach schedules to it.`,
    );
  }
  return { task: input.task, cron, timezone, externalId: input.externalId ?? null };
}

/** DECLARATIVE schedules belong to the task's code: the API may read them but never change them. */
export function assertImperative(schedule: ScheduleRow, verb: "update" | "activate" | "deactivate" | "delete"): void {
  if (schedule.type === "DECLARATIVE") {
    throw new UnprocessableError(
      `Cannot ${verb} a declarative schedule (${schedule.id}): it comes from the cron option of schedules.task("${schedule.task_identifier}"). Change or remove the cron in the task's code instead.`,
    );
  }
}
