import { DEFAULT_TIMEZONE, parseCron, parseTimezone } from "../engine/schedules/cron.ts";
import { task, type Task, type TaskOptions, type TaskRunParams } from "./task.ts";

/** What a scheduled task's `run` receives (Trigger.dev's ScheduledTaskPayload). */
export interface ScheduledTaskPayload {
  /** The schedule that fired (`sched_…`); use it with `schedules.retrieve/update/del`. */
  scheduleId: string;
  /** DECLARATIVE: from the task's `cron` option. IMPERATIVE: created with `schedules.create`. */
  type: "DECLARATIVE" | "IMPERATIVE";
  /** The tick this run is for (UTC). Slightly earlier than the moment the run starts. */
  timestamp: Date;
  /** The previous tick that fired; undefined on the first run. */
  lastTimestamp?: Date;
  /** The externalId given to `schedules.create`, if any. */
  externalId?: string;
  /** The IANA timezone the cron is evaluated in. */
  timezone: string;
  /** The next 10 ticks after this one. */
  upcoming: Date[];
}

/** A cron expression (5 fields), or one with the timezone it is evaluated in. */
export type CronOption = string | { pattern: string; /** @default "UTC" */ timezone?: string };

export interface ScheduledTaskOptions<TIdentifier extends string = string, TOutput = unknown> extends Omit<TaskOptions<TIdentifier, ScheduledTaskPayload, TOutput>, "run"> {
  run(payload: ScheduledTaskPayload, params: TaskRunParams): Promise<TOutput> | TOutput;
  /**
   * A declarative schedule: the task fires on this cron in every environment a worker runs it in.
   * Without it, attach schedules at runtime with `schedules.create({ task: id, cron })`.
   * @default undefined (no declarative schedule)
   */
  cron?: CronOption;
}

/**
 * Declares a task that runs on a schedule. Give it a `cron` for a declarative schedule (kept in
 * sync with your code each time a worker starts), or leave it out and create schedules at runtime
 * with `schedules.create` (imperative, e.g. one per user). Cron expressions have 5 fields.
 *
 * @example
 * import { schedules } from "@svc/runtime";
 *
 * export const nightlyReport = schedules.task({
 *   id: "nightly-report",
 *   cron: { pattern: "30 2 * * *", timezone: "Europe/Berlin" },
 *   run: async (payload) => {
 *     console.log(`tick ${payload.timestamp.toISOString()}, previous ${payload.lastTimestamp?.toISOString() ?? "none"}`);
 *     return { next: payload.upcoming[0] };
 *   },
 * });
 */
export function scheduledTask<TIdentifier extends string, TOutput = unknown>(options: ScheduledTaskOptions<TIdentifier, TOutput>): Task<TIdentifier, ScheduledTaskPayload, TOutput> {
  const { cron, run, ...rest } = options;
  const schedule = cron === undefined ? undefined : declaredSchedule(options.id, cron);
  const base = task<TIdentifier, ScheduledTaskPayload, TOutput>({ ...rest, run: (payload, params) => run(toScheduledPayload(payload), params) });
  // Hooks see the payload with its dates, as `run` does (converting twice changes nothing).
  return { ...base, kind: "SCHEDULED", parsePayload: toScheduledPayload, ...(schedule ? { schedule } : {}) };
}

function declaredSchedule(id: string, cron: CronOption): { cron: string; timezone: string } {
  const pattern = typeof cron === "string" ? cron : cron?.pattern;
  if (typeof pattern !== "string") throw new Error(`schedules.task("${id}"): \`cron\` must be a string or { pattern, timezone }`);
  try {
    return {
      cron: parseCron(pattern),
      timezone: parseTimezone(typeof cron === "string" ? DEFAULT_TIMEZONE : (cron.timezone ?? DEFAULT_TIMEZONE)),
    };
  } catch (error) {
    throw new Error(`schedules.task("${id}"): ${(error as Error).message}`);
  }
}

/** Scheduled runs store dates as ISO strings; task code gets Dates back. Other payloads pass through. */
export function toScheduledPayload(raw: unknown): ScheduledTaskPayload {
  if (typeof raw !== "object" || raw === null) return raw as ScheduledTaskPayload;
  const p = raw as Record<string, unknown>;
  const date = (v: unknown) => (typeof v === "string" || typeof v === "number" ? new Date(v) : v);
  return {
    ...p,
    timestamp: date(p.timestamp),
    ...(p.lastTimestamp !== undefined && p.lastTimestamp !== null ? { lastTimestamp: date(p.lastTimestamp) } : {}),
    upcoming: Array.isArray(p.upcoming) ? p.upcoming.map(date) : [],
  } as ScheduledTaskPayload;
}

/**
 * Scheduled tasks. `schedules.task` declares one; the management calls (`create`, `list`,
 * `retrieve`, `update`, `activate`, `deactivate`, `del`, `timezones`) live in the client.
 *
 * @example
 * export const everyHour = schedules.task({ id: "every-hour", cron: "0 * * * *", run: async (p) => p.timestamp });
 */
export const schedules = { task: scheduledTask };
