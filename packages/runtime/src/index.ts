// The public SDK surface: what task authors and backends import from "@svc/runtime".
// Server-only code lives under "@svc/runtime/engine".

// Declaring tasks, their queues and the project config (Trigger.dev v4's task side).
export {
  task, schemaTask, type Task, type AnyTask, type TaskWithSchema, type TaskWithSchemaOptions, type TaskIdentifier, type TaskPayload, type TaskOutput,
  type TaskOptions, type TaskContext, type TaskRunParams, type QueueOptions, type IdempotencyKeyScope,
} from "./sdk/task.ts";
export type { TaskSchema, StandardSchemaV1, inferSchemaIn, inferSchemaOut } from "./sdk/schema.ts";
export { queue, type Queue } from "./sdk/queue.ts";
export { concurrencyLimit, type ConcurrencyLimit, type ConcurrencyLimitOptions, type ConcurrencyShape, type TaskConcurrency } from "./sdk/concurrency-limit.ts";
export type { RateLimit } from "./sdk/rate-limit.ts";
export type * from "./sdk/hooks/hook-types.ts";
export { AbortTaskRunError, SubtaskUnwrapError, TaskPayloadParsedError } from "./sdk/task-errors.ts";
export { defineConfig, type SvcConfig } from "./sdk/config.ts";
export type { ScheduledTaskPayload, ScheduledTaskOptions, CronOption } from "./sdk/schedules-task.ts";
export type { RetryPolicy } from "./engine/runs/retry-policy.ts";

// What task code calls during a run, merged with the HTTP client where both exist.
export { tasks, wait, schedules, sessions } from "./sdk/namespaces.ts";
export { RunSession, SessionInput, SessionOutput, TURN_COMPLETE, type SessionWriter } from "./sdk/session-channels.ts";
export type { ChannelRecord, ChannelWaitOptions } from "./sdk/run-context.ts";
export { step } from "./sdk/step.ts";
export { logger } from "./sdk/logger.ts";
export type { LogLevel } from "./sdk/task-logs.ts";
export { locals, type LocalsKey } from "./sdk/locals.ts";
export { tags } from "./sdk/tags.ts";
export { metadata, type MetadataUpdater } from "./sdk/metadata.ts";
export {
  streams,
  type AppendStreamOptions,
  type InferStreamType,
  type InputStream,
  type InputStreamOnceOptions,
  type PipedStream,
  type PipeStreamOptions,
  type RealtimeDefinedStream,
  type StreamWriter,
  type StreamWriteResult,
  type WriterStreamOptions,
} from "./sdk/streams.ts";
export type { InputWaitOptions, StreamTarget } from "./sdk/run-context.ts";
export { retry } from "./sdk/retry.ts";
export type { FetchRetryOptions, FetchRetryStrategy, RetryFetchRequestInit } from "./sdk/retry-fetch.ts";
export { WaitpointTimeoutError, type WaitResult } from "./sdk/wait-result.ts";
export type { TaskRunResult, TaskRunPromise, BatchResult, TriggerAndWaitOptions } from "./sdk/trigger-and-wait.ts";
export type { WaitOptions, CreateTokenOptions, CreatedToken } from "./sdk/run-context.ts";
export type { DurationSpec, WaitPromise } from "./sdk/wait.ts";

// Management client over HTTP (packages/runtime/src/client).
export * from "./client/index.ts";
