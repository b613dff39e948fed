// Server-side engine shared by the worker and the API. Not for task code.
export * from "../errors.ts";
export * from "../clock.ts";
export * from "../durations.ts";
export * from "../ids.ts";
export * from "./deps.ts";
export * from "./dispatch.ts";
export * from "./tenancy/index.ts";
export * from "./runs/statuses.ts";
export * from "./runs/store.ts";
export * from "./runs/trigger.ts";
export * from "./runs/payloads.ts";
export * from "./runs/retry-policy.ts";
export * from "./channels.ts";
export * from "./waitpoints/statuses.ts";
export * from "./waitpoints/store.ts";
export * from "./waitpoints/complete-waitpoint.ts";
export * from "./timers/fire-due.ts";
