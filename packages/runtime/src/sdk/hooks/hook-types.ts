// The parameters and functions of lifecycle hooks, with Trigger.dev v4's names and shapes, so a
// task file's hooks port unchanged. What they mean under svc's replay model: task-options.ts.
import type { RetryPolicy } from "../../engine/runs/retry-policy.ts";
import type { TaskWait } from "../run-context.ts";
import type { TaskContext } from "../task-context.ts";

export type { TaskWait };

/** What `init` may return: handed to `run` and to the other hooks as `init`. */
export type TaskInitOutput = Record<string, any> | void | undefined;

interface HookParams<TPayload> {
  ctx: TaskContext;
  payload: TPayload;
  /** The task's id. */
  task: string;
  signal: AbortSignal;
}

export type TaskInitHookParams<TPayload = unknown> = HookParams<TPayload>;
export type TaskStartHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { init?: TInitOutput };
export type TaskStartAttemptHookParams<TPayload = unknown> = HookParams<TPayload>;
export type TaskWaitHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { wait: TaskWait; init?: TInitOutput };
export type TaskResumeHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { wait: TaskWait; init?: TInitOutput };
export type TaskFailureHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { error: unknown; init?: TInitOutput };
export type TaskSuccessHookParams<TPayload = unknown, TOutput = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { output: TOutput; init?: TInitOutput };
export type TaskCompleteResult<TOutput> = { ok: true; data: TOutput } | { ok: false; error: unknown };
export type TaskCompleteHookParams<TPayload = unknown, TOutput = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & {
  result: TaskCompleteResult<TOutput>;
  init?: TInitOutput;
};
export type TaskCatchErrorHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & {
  error: unknown;
  /** The task's retry settings. */
  retry?: RetryPolicy;
  /** When the run would be retried without this hook; undefined when it would not be. */
  retryAt?: Date;
  retryDelayInMs?: number;
  init?: TInitOutput;
};
export type TaskMiddlewareHookParams<TPayload = unknown> = HookParams<TPayload> & { next: () => Promise<void> };
export type TaskCleanupHookParams<TPayload = unknown, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & { init?: TInitOutput };
export type TaskCancelHookParams<TPayload = unknown, TRunOutput = any, TInitOutput extends TaskInitOutput = TaskInitOutput> = HookParams<TPayload> & {
  /** The run function's promise (it never settles once the execution was stopped at a durable call). */
  runPromise: Promise<TRunOutput>;
  init?: TInitOutput;
};

/** What `catchError` may return: how the run goes on after the error, or undefined for the default. */
export type HandleErrorModificationOptions = {
  /** Fail the run now, whatever attempts are left. */
  skipRetrying?: boolean | undefined;
  /** Retry at this time (only while the run has attempts left). */
  retryAt?: Date | undefined;
  /** Retry after this delay (only while the run has attempts left). */
  retryDelayInMs?: number | undefined;
  /** Retry with these settings instead of the task's (their maxAttempts counts). */
  retry?: RetryPolicy | undefined;
  /** Record this error instead of the one thrown. */
  error?: unknown;
};
export type HandleErrorResult = undefined | void | HandleErrorModificationOptions | Promise<undefined | void | HandleErrorModificationOptions>;

type Awaitable<T> = T | Promise<T>;
export type OnInitHookFunction<TPayload, TInitOutput extends TaskInitOutput> = (params: TaskInitHookParams<TPayload>) => Awaitable<TInitOutput | undefined | void>;
export type OnStartHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskStartHookParams<TPayload, TInitOutput>) => Awaitable<undefined | void>;
export type OnStartAttemptHookFunction<TPayload> = (params: TaskStartAttemptHookParams<TPayload>) => Awaitable<undefined | void>;
export type OnWaitHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskWaitHookParams<TPayload, TInitOutput>) => Awaitable<undefined | void>;
export type OnResumeHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskResumeHookParams<TPayload, TInitOutput>) => Awaitable<undefined | void>;
export type OnFailureHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskFailureHookParams<TPayload, TInitOutput>) => Awaitable<undefined | void>;
export type OnSuccessHookFunction<TPayload, TOutput, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskSuccessHookParams<TPayload, TOutput, TInitOutput>) => Awaitable<undefined | void>;
export type OnCompleteHookFunction<TPayload, TOutput, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskCompleteHookParams<TPayload, TOutput, TInitOutput>) => Awaitable<undefined | void>;
export type OnCatchErrorHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskCatchErrorHookParams<TPayload, TInitOutput>) => HandleErrorResult;
export type OnMiddlewareHookFunction<TPayload> = (params: TaskMiddlewareHookParams<TPayload>) => Promise<void>;
export type OnCleanupHookFunction<TPayload, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskCleanupHookParams<TPayload, TInitOutput>) => Awaitable<undefined | void>;
export type OnCancelHookFunction<TPayload, TRunOutput = any, TInitOutput extends TaskInitOutput = TaskInitOutput> = (params: TaskCancelHookParams<TPayload, TRunOutput, TInitOutput>) => Awaitable<undefined | void>;

export type AnyOnInitHookFunction = OnInitHookFunction<unknown, TaskInitOutput>;
export type AnyOnStartHookFunction = OnStartHookFunction<unknown, TaskInitOutput>;
export type AnyOnStartAttemptHookFunction = OnStartAttemptHookFunction<unknown>;
export type AnyOnWaitHookFunction = OnWaitHookFunction<unknown, TaskInitOutput>;
export type AnyOnResumeHookFunction = OnResumeHookFunction<unknown, TaskInitOutput>;
export type AnyOnFailureHookFunction = OnFailureHookFunction<unknown, TaskInitOutput>;
export type AnyOnSuccessHookFunction = OnSuccessHookFunction<unknown, unknown, TaskInitOutput>;
export type AnyOnCompleteHookFunction = OnCompleteHookFunction<unknown, unknown, TaskInitOutput>;
export type AnyOnCatchErrorHookFunction = OnCatchErrorHookFunction<unknown, TaskInitOutput>;
export type AnyOnMiddlewareHookFunction = OnMiddlewareHookFunction<unknown>;
export type AnyOnCleanupHookFunction = OnCleanupHookFunction<unknown, TaskInitOutput>;
export type AnyOnCancelHookFunction = OnCancelHookFunction<unknown, unknown, TaskInitOutput>;
