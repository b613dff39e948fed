import { z } from "zod";
import { storedText } from "./text.ts";

/**
 * Schedules on Trigger.dev's paths (/api/v1/schedules…). Shapes are checked here (400); cron,
 * timezone and task are checked by the engine (422 naming the problem).
 */

export const SCHEDULE_PAGE_DEFAULT = 20;
export const SCHEDULE_PAGE_MAX = 100;

const TaskId = storedText(z.string().min(1, "must not be empty").max(128));
// Cron and timezone are not stored unless the engine recognises them (422 otherwise).
// An empty one is a 422 from the engine like any invalid cron: the document says minLength 1 all the same.
const Cron = z.string().max(256).meta({ minLength: 1 });
const ExternalId = storedText(z.string().max(256));
const Timezone = z.string().max(100);

/** POST /api/v1/schedules. A second create with the same deduplicationKey updates that schedule. */
export const CreateScheduleBody = z.object({
  task: TaskId,
  cron: Cron,
  deduplicationKey: storedText(z.string().min(1, "must not be empty").max(256)).optional(),
  externalId: ExternalId.optional(),
  /** @default "UTC" */
  timezone: Timezone.optional(),
});
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

/** PUT /api/v1/schedules/{id}: replaces the definition (an omitted externalId is cleared, timezone resets to UTC). */
export const UpdateScheduleBody = z.object({
  task: TaskId,
  cron: Cron,
  externalId: ExternalId.optional(),
  /** @default "UTC" */
  timezone: Timezone.optional(),
});
export type UpdateScheduleBody = z.infer<typeof UpdateScheduleBody>;

/** `{id}` is the sched_… id or the schedule's deduplicationKey. */
export const ScheduleParams = z.object({ id: storedText(z.string().min(1).max(256)) });

/** Offset pages: `page` is 1-based; `perPage` defaults to 20 and is capped at 100. */
export const ListSchedulesQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  perPage: z.coerce.number().int().min(1).max(1_000_000).optional(),
});

export const TimezonesQuery = z.object({
  excludeUtc: z.enum(["true", "false"]).optional(),
});

export const ScheduleObject = z.object({
  id: z.string(),
  type: z.enum(["IMPERATIVE", "DECLARATIVE"]),
  task: z.string(),
  active: z.boolean(),
  deduplicationKey: z.string().nullable(),
  externalId: z.string().nullable(),
  generator: z.object({ type: z.literal("CRON"), expression: z.string(), description: z.string() }),
  timezone: z.string(),
  /** ISO date of the next tick. */
  nextRun: z.string().nullable(),
  environments: z.array(z.object({ id: z.string(), type: z.string(), userName: z.string().nullable() })),
});
export type ScheduleObject = z.infer<typeof ScheduleObject>;

export const ListSchedulesResponse = z.object({
  data: z.array(ScheduleObject),
  pagination: z.object({ currentPage: z.number(), totalPages: z.number(), count: z.number() }),
});
export type ListSchedulesResponse = z.infer<typeof ListSchedulesResponse>;

export const DeletedScheduleResponse = z.object({ id: z.string() });

export const TimezonesResponse = z.object({ timezones: z.array(z.string()) });
