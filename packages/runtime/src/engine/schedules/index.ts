// Cron schedules: validation and tick maths (cron.ts), SQL (store.ts), the imperative API service
// (manage-schedules.ts), worker-start sync of schedules.task crons (sync-declarative.ts), firing
// (fire-due-schedules.ts, `dueSchedules` for the timer loop) and the API shape (present.ts).
export * from "./cron.ts";
export * from "./store.ts";
export * from "./validate.ts";
export * from "./manage-schedules.ts";
export * from "./sync-declarative.ts";
export * from "./fire-due-schedules.ts";
export * from "./present.ts";
