// In-run SDK pieces (task code), re-exported by the package root; the worker imports the types.
export * from "./task.ts";
export * from "./run-context.ts";
export * from "./wait.ts";
export * from "./wait-result.ts";
export * from "./step.ts";
export * from "./trigger-and-wait.ts";
export * from "./config.ts";
export * from "./never.ts";
export * from "./session-channels.ts";
export * from "./config-file.ts";
