import type { RetryPolicy } from "../engine/runs/retry-policy.ts";
import type { IDEMPOTENCY_KEY_SCOPES } from "../contracts/trigger.ts";

/** What an idempotency key is unique to: the run that triggered, its attempt, or nothing (global). */
export type IdempotencyKeyScope = (typeof IDEMPOTENCY_KEY_SCOPES)[number];

/** What a running task receives besides its payload. */
export interface TaskContext {
  run: {
    id: string;
    tags: string[];
    isTest: boolean;
    createdAt: Date;
    /** The idempotency key the run was triggered with, as its user gave it (not the hash the SDK sends). */
    idempotencyKey?: string;
    /** What that key was unique to, when the trigger said (idempotencyKeys.create's `scope`). */
    idempotencyKeyScope?: IdempotencyKeyScope;
    maxAttempts?: number;
    version?: string;
  };
  attempt: { number: number; startedAt: Date };
  task: { id: string; filePath?: string };
  queue: { name: string };
  environment: { id: string; slug: string; type: string; branchName?: string };
  project: { id: string; ref: string };
  organization: { id: string };
  batch?: { id: string };
}

export interface TaskRunParams {
  ctx: TaskContext;
  /** Aborted when the run is canceled or exceeds maxDuration. */
  signal: AbortSignal;
}

export interface QueueOptions {
  /** @default `task/<id>` */
  name?: string;
  /** At most this many runs of the queue execute at once, across all workers (per concurrencyKey). */
  concurrencyLimit?: number;
}

export interface TaskOptions<TPayload = any, TOutput = unknown> {
  /** Unique within an environment. */
  id: string;
  run(payload: TPayload, params: TaskRunParams): Promise<TOutput> | TOutput;
  /** @default { maxAttempts: 3, factor: 2, minTimeoutInMs: 1000, maxTimeoutInMs: 60000, randomize: true } */
  retry?: RetryPolicy;
  queue?: QueueOptions;
  /** Seconds of execution before the attempt is stopped (TIMED_OUT). */
  maxDuration?: number;
}

/** A declared task; also the handle other code triggers it through. */
export interface Task<TPayload = any, TOutput = unknown> extends TaskOptions<TPayload, TOutput> {
  readonly kind: "STANDARD" | "SCHEDULED";
  /** Declarative cron schedule (set by schedules.task). */
  readonly schedule?: { cron: string; timezone?: string };
  /** @internal marker the worker's loader looks for */
  readonly __svcTask: true;
}

/**
 * Declares a task. Export it from a file in one of your task folders; the worker finds it there.
 *
 * @example
 * export const hello = task({
 *   id: "hello-world",
 *   retry: { maxAttempts: 3 },
 *   run: async (payload: { name: string }, { ctx }) => {
 *     return { greeting: `Hello, ${payload.name}!`, attempt: ctx.attempt.number };
 *   },
 * });
 */
export function task<TPayload = any, TOutput = unknown>(options: TaskOptions<TPayload, TOutput>): Task<TPayload, TOutput> {
  if (!options.id || typeof options.id !== "string") throw new Error("task(): `id` is required");
  if (typeof options.run !== "function") throw new Error(`task("${options.id}"): \`run\` must be a function`);
  return { ...options, kind: "STANDARD", __svcTask: true };
}

/** Used by schedules.task and the worker's loader. */
export function isTask(value: unknown): value is Task {
  return typeof value === "object" && value !== null && (value as { __svcTask?: unknown }).__svcTask === true;
}
