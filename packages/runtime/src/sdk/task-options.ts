import type { RetryPolicy } from "../engine/runs/retry-policy.ts";
import type {
  OnCancelHookFunction, OnCatchErrorHookFunction, OnCleanupHookFunction, OnCompleteHookFunction, OnFailureHookFunction, OnInitHookFunction,
  OnMiddlewareHookFunction, OnResumeHookFunction, OnStartAttemptHookFunction, OnStartHookFunction, OnSuccessHookFunction, OnWaitHookFunction, TaskInitOutput,
} from "./hooks/hook-types.ts";
import type { TaskConcurrency } from "./concurrency-limit.ts";
import type { RateLimit } from "./rate-limit.ts";
import type { TaskContext } from "./task-context.ts";

export type { TaskContext };
export type { IdempotencyKeyScope } from "./task-context.ts";

/** What a task's `run` receives besides its payload. */
export interface TaskRunParams<TInitOutput extends TaskInitOutput = any> {
  ctx: TaskContext;
  /** What `init` returned in this execution (init runs again in every execution: see `init`). */
  init?: TInitOutput;
  /** Aborted when the run is canceled or exceeds maxDuration. */
  signal: AbortSignal;
}

export interface QueueOptions {
  /** @default `task/<id>` */
  name?: string;
  /** At most this many runs of the queue execute at once, across all workers (per concurrencyKey). */
  concurrencyLimit?: number;
  /** At most `limit` runs of the queue start in any window of `period` (per rate key). docs/rate-limits.md */
  rateLimit?: RateLimit;
}

/**
 * A task's options: Trigger.dev v4's, under svc's replay model. A run that waits is checkpointed
 * and, when it resumes, its function runs again from the top in a new **execution** of the same
 * attempt, durable calls returning what they recorded. What that means for each hook is said
 * with it; svc also says it once per worker process, in its log, when a run first meets it.
 */
export interface TaskOptions<TIdentifier extends string = string, TPayload = any, TOutput = unknown, TInitOutput extends TaskInitOutput = any> {
  /** Unique within an environment. */
  id: TIdentifier;
  description?: string;
  run(payload: TPayload, params: TaskRunParams<TInitOutput>): Promise<TOutput> | TOutput;
  /** @default { maxAttempts: 3, factor: 2, minTimeoutInMs: 1000, maxTimeoutInMs: 60000, randomize: true } */
  retry?: RetryPolicy;
  /** The queue, by name (a queue declared with `queue()`, or just a name) or as options. @default `task/<id>` */
  queue?: string | QueueOptions;
  /**
   * Its queue's rate limit (the same as `queue: { rateLimit }`): at most `limit` runs start in any
   * window of `period`, across all workers, per rate key (a trigger's `rateLimit: { key }`; runs
   * without one share one copy). A run over the rate stays QUEUED until its slot; a run that
   * resumes after a wait is not counted. Tasks sharing a queue share its rate. docs/rate-limits.md
   *
   * @example
   * task({ id: "call-openai", rateLimit: { limit: 10, period: "1s" }, run: async () => {} });
   */
  rateLimit?: RateLimit;
  /**
   * The concurrency limits its runs hold (Trigger.dev's task `concurrency`): an inline limit
   * (`{ total, perKey }`) that caps this task's runs, and up to two named limits
   * (`concurrencyLimit()`, or a limit's name) shared with every task holding them. A run starts only
   * when every limit it holds has room, across all workers; a trigger's `concurrency` replaces the
   * named ones for its run (the inline one stays). docs/queues-and-concurrency.md
   *
   * @default none
   * @example
   * export const openaiLimit = concurrencyLimit({ name: "openai", total: 25 });
   * task({ id: "summarize", concurrency: [{ perKey: 1, total: 10 }, openaiLimit], run: async () => {} });
   */
  concurrency?: TaskConcurrency;
  /**
   * Seconds an execution may run before it is stopped: `signal` aborts and the run ends
   * TIMED_OUT (MAX_DURATION_EXCEEDED). Trigger.dev counts an attempt's compute time; svc counts
   * each execution of the attempt on its own — a run resumed after a wait starts a fresh count
   * (waiting does not count, replaying does).
   */
  maxDuration?: number;
  /** Accepted for Trigger.dev compatibility and ignored: svc runs tasks on its workers' machines. */
  machine?: string | { preset?: string; cpu?: number; memory?: number };
  /**
   * Runs before `run` in **every execution** (also each resume after a wait: the run's memory is
   * not kept across a wait); its return value is `init` for `run` and the other hooks.
   * Trigger.dev runs it once per attempt.
   * @deprecated in Trigger.dev v4 in favour of `locals` and `middleware`.
   */
  init?: OnInitHookFunction<TPayload, TInitOutput>;
  /**
   * Runs after `run` in every execution: when `run` returned or threw, and also when the run
   * suspends at a wait (what `init` opened is closed then; it opens again on resume).
   * Trigger.dev runs it once per attempt, at its end. Errors are logged.
   * @deprecated in Trigger.dev v4 in favour of `middleware`.
   */
  cleanup?: OnCleanupHookFunction<TPayload, TInitOutput>;
  /**
   * Wraps the rest (init, hooks, run) in every execution. Code after `await next()` runs only in
   * the execution that ends the run: at a wait the execution stops inside `next()`.
   */
  middleware?: OnMiddlewareHookFunction<TPayload>;
  /**
   * Runs once per run, before `run`, in its first attempt: recorded in the run's ledger, so a
   * resume does not run it again (if the worker dies after it ran but before the record, it runs
   * again).
   * @deprecated in Trigger.dev v4 in favour of `onStartAttempt`.
   */
  onStart?: OnStartHookFunction<TPayload, TInitOutput>;
  /** Runs once per attempt, before `run`: recorded in the run's ledger, so a resume does not run it again. */
  onStartAttempt?: OnStartAttemptHookFunction<TPayload>;
  /** Runs when `run` returned, in the execution that ends the run. Errors are logged. */
  onSuccess?: OnSuccessHookFunction<TPayload, TOutput, TInitOutput>;
  /** Runs when `run` threw and the run will not be retried. Errors are logged. */
  onFailure?: OnFailureHookFunction<TPayload, TInitOutput>;
  /** Runs after onSuccess, or after onFailure. Errors are logged. */
  onComplete?: OnCompleteHookFunction<TPayload, TOutput>;
  /**
   * Runs once per wait, after the wait is recorded. When the wait suspends the run, the run is
   * already WAITING while onWait runs (it may resume elsewhere meanwhile), and durable calls made
   * from it never settle.
   */
  onWait?: OnWaitHookFunction<TPayload>;
  /**
   * Runs once per wait, when its result is first handed to the code (in the execution that
   * resumes the run, after replaying up to the wait); recorded in the run's ledger.
   */
  onResume?: OnResumeHookFunction<TPayload>;
  /** Runs when the run is canceled while it executes (its execution is stopped; `signal` aborts). */
  onCancel?: OnCancelHookFunction<TPayload, TOutput, TInitOutput>;
  /** Runs when `run` throws: returns how to go on (skip retrying, retry at/after, other settings), or nothing for the default. */
  catchError?: OnCatchErrorHookFunction<TPayload>;
  /** @deprecated Trigger.dev v4's old name of `catchError`. */
  handleError?: OnCatchErrorHookFunction<TPayload>;
}
