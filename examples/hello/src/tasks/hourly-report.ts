import { schedules } from "@svc/runtime";

/** A declarative schedule: fires at the top of every hour (UTC) while a worker runs. */
export const hourlyReport = schedules.task({
  id: "hourly-report",
  cron: "0 * * * *",
  run: async (payload) => ({ tick: payload.timestamp.toISOString(), next: payload.upcoming[0]?.toISOString() }),
});
