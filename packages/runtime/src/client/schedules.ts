// Imperative cron schedules: /api/v1/schedules[/{id}[/activate|/deactivate]] (secret key only).
// `{id}` may be the schedule id (`sched_…`) or its deduplicationKey.
import { segment, type HttpTransport } from "./http.ts";
import { OffsetPage, pagePromise, reviveDates, type OffsetPagination, type PagePromise } from "./pagination.ts";

export interface ScheduleObject {
  id: string;
  type: "IMPERATIVE" | "DECLARATIVE";
  task: string;
  active: boolean;
  deduplicationKey?: string | null;
  externalId?: string | null;
  generator: { type: "CRON"; expression: string; description: string };
  /** IANA time zone the cron expression is read in. */
  timezone: string;
  nextRun?: Date | null;
  environments: { id: string; type: string; userName?: string | null }[];
}

export interface CreateScheduleOptions {
  /** The scheduled task's id. */
  task: string;
  /** Five-field cron expression, e.g. "0 * * * *". */
  cron: string;
  /** Creating again with the same key updates that schedule instead of adding one. */
  deduplicationKey: string;
  /** Your own id (e.g. a user id); passed to each run. */
  externalId?: string;
  /** @default "UTC" */
  timezone?: string;
}

export type UpdateScheduleOptions = Omit<CreateScheduleOptions, "deduplicationKey">;

export interface ListSchedulesOptions {
  /** 1-based. @default 1 */
  page?: number;
  /** @default 20 (max 100) */
  perPage?: number;
}

const reviveSchedule = (s: ScheduleObject) => reviveDates(s, ["nextRun"]);

export class SchedulesResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Creates a schedule, or updates the one with the same deduplicationKey.
   *
   * @example
   * const schedule = await schedules.create({
   *   task: "daily-report", cron: "0 9 * * 1-5", timezone: "Europe/London", deduplicationKey: "report-user-42", externalId: "user-42",
   * });
   */
  async create(options: CreateScheduleOptions): Promise<ScheduleObject> {
    const { data } = await this.connect().request<ScheduleObject>({ method: "POST", path: "/api/v1/schedules", body: options });
    return reviveSchedule(data);
  }

  /**
   * Lists schedules; await for one page or `for await` for all.
   *
   * @example
   * for await (const schedule of schedules.list({ perPage: 50 })) console.log(schedule.id, schedule.active);
   */
  list(options: ListSchedulesOptions = {}): PagePromise<OffsetPage<ScheduleObject>, ScheduleObject> {
    const http = this.connect();
    const fetchPage = async (page: number | undefined): Promise<OffsetPage<ScheduleObject>> => {
      const { data } = await http.request<{ data: ScheduleObject[]; pagination: OffsetPagination }>({
        method: "GET",
        path: "/api/v1/schedules",
        query: { page, perPage: options.perPage },
      });
      const pagination = {
        currentPage: Number(data.pagination?.currentPage ?? page ?? 1),
        totalPages: Number(data.pagination?.totalPages ?? 1),
        count: Number(data.pagination?.count ?? data.data.length),
      };
      return new OffsetPage((data.data ?? []).map(reviveSchedule), pagination, fetchPage);
    };
    return pagePromise(fetchPage(options.page));
  }

  /**
   * @example
   * const schedule = await schedules.retrieve("sched_abc");
   */
  async retrieve(scheduleId: string): Promise<ScheduleObject> {
    const { data } = await this.connect().request<ScheduleObject>({ method: "GET", path: `/api/v1/schedules/${segment(scheduleId)}` });
    return reviveSchedule(data);
  }

  /**
   * Replaces task, cron, timezone and externalId. Declarative schedules cannot be changed (422).
   *
   * @example
   * await schedules.update("sched_abc", { task: "daily-report", cron: "0 10 * * *" });
   */
  async update(scheduleId: string, options: UpdateScheduleOptions): Promise<ScheduleObject> {
    const { data } = await this.connect().request<ScheduleObject>({ method: "PUT", path: `/api/v1/schedules/${segment(scheduleId)}`, body: options });
    return reviveSchedule(data);
  }

  /**
   * @example
   * await schedules.activate("sched_abc");
   */
  async activate(scheduleId: string): Promise<ScheduleObject> {
    const { data } = await this.connect().request<ScheduleObject>({ method: "POST", path: `/api/v1/schedules/${segment(scheduleId)}/activate` });
    return reviveSchedule(data);
  }

  /**
   * An inactive schedule never fires until activated again.
   *
   * @example
   * await schedules.deactivate("sched_abc");
   */
  async deactivate(scheduleId: string): Promise<ScheduleObject> {
    const { data } = await this.connect().request<ScheduleObject>({ method: "POST", path: `/api/v1/schedules/${segment(scheduleId)}/deactivate` });
    return reviveSchedule(data);
  }

  /**
   * Deletes a schedule.
   *
   * @example
   * await schedules.del("sched_abc");
   */
  async del(scheduleId: string): Promise<{ id: string }> {
    const { data } = await this.connect().request<{ id: string }>({ method: "DELETE", path: `/api/v1/schedules/${segment(scheduleId)}` });
    return data;
  }

  /**
   * The IANA time zones schedules accept.
   *
   * @example
   * const { timezones } = await schedules.timezones();
   */
  async timezones(options: { excludeUtc?: boolean } = {}): Promise<{ timezones: string[] }> {
    const { data } = await this.connect().request<{ timezones: string[] }>({
      method: "GET",
      path: "/api/v1/timezones",
      query: { excludeUtc: options.excludeUtc },
    });
    return data;
  }
}
