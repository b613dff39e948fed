// The public SDK surface: what task authors and backends import from "@svc/runtime".
// Server-only code lives under "@svc/runtime/engine".

// Declaring tasks and the project config.
export { task, type Task, type TaskOptions, type TaskContext, type TaskRunParams, type QueueOptions, type IdempotencyKeyScope } from "./sdk/task.ts";
export { defineConfig, type SvcConfig } from "./sdk/config.ts";
export type { ScheduledTaskPayload, ScheduledTaskOptions, CronOption } from "./sdk/schedules-task.ts";
export type { RetryPolicy } from "./engine/runs/retry-policy.ts";

// What task code calls during a run, merged with the HTTP client where both exist.
export { tasks, wait, schedules, sessions } from "./sdk/namespaces.ts";
export { RunSession, SessionInput, SessionOutput, TURN_COMPLETE, type SessionWriter } from "./sdk/session-channels.ts";
export type { ChannelRecord, ChannelWaitOptions } from "./sdk/run-context.ts";
export { step } from "./sdk/step.ts";
export { WaitpointTimeoutError, type WaitResult } from "./sdk/wait-result.ts";
export type { TaskRunResult } from "./sdk/trigger-and-wait.ts";
export type { WaitOptions, CreateTokenOptions, CreatedToken } from "./sdk/run-context.ts";
export type { DurationSpec } from "./sdk/wait.ts";

// Management client over HTTP (packages/runtime/src/client).
export * from "./client/index.ts";
