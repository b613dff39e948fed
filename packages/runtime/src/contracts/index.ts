export * from "./trigger.ts";
export * from "./waitpoints.ts";
export * from "./envvars.ts";
export * from "./schedules.ts";
export * from "./runs.ts";
export * from "./run-object.ts";
export * from "./batches.ts";
export * from "./text.ts";
