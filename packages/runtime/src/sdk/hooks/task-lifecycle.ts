import type { RetryPolicy } from "../../engine/runs/retry-policy.ts";
import { logger } from "../logger.ts";
import type { RunExecution, TaskWait } from "../run-context.ts";
import { skipsRetrying, TaskPayloadParsedError } from "../task-errors.ts";
import type { Task } from "../task.ts";
import { globalHooksOf } from "./global-hooks.ts";
import type { HandleErrorModificationOptions, TaskInitOutput } from "./hook-types.ts";

/** How an attempt's code ended: returned, or threw (and whether and when the run is retried). */
export type AttemptOutcome = { kind: "returned"; output: unknown } | { kind: "failed"; error: unknown; retryAt: Date | null };

/** When the run would be retried after `error` by the task's retry settings (or `policy`); null: not at all. */
export type RetryDecider = (error: unknown, policy?: RetryPolicy) => { at: Date; delayMs: number } | null;

export interface TaskLifecycleArgs {
  task: Task;
  execution: RunExecution;
  /** The payload as stored (a schemaTask's schema parses it first). */
  payload: unknown;
  signal: AbortSignal;
  /** The execution resumes a run that waited. */
  resumed: boolean;
  decide: RetryDecider;
  /** Called once `run` returned, before the success hooks (the run's session `.out` records are stored then). */
  afterRun?: () => Promise<void>;
  /** Errors the code cannot be told of (a hook that failed after the run's outcome was known). */
  isInternal?: (error: unknown) => boolean;
}

/**
 * One execution of a task with its lifecycle hooks, in Trigger.dev's order: middleware around
 * init, onStart, onStartAttempt, run, then catchError, onFailure or onSuccess, onComplete, cleanup.
 * What the replay model changes (onStart recorded once, init in every execution, cleanup when the
 * run suspends…) is said with each hook in TaskOptions. The worker calls `run` in the run's
 * context, and `suspended`, `canceled` or `stopped` when the execution ends another way.
 */
export class TaskLifecycle {
  readonly #args: TaskLifecycleArgs;
  #payload: unknown;
  #init: TaskInitOutput;
  #runPromise: Promise<unknown> | null = null;
  #cleaned = false;

  constructor(args: TaskLifecycleArgs) {
    this.#args = args;
    this.#payload = args.payload;
  }

  async run(): Promise<AttemptOutcome> {
    const { task, execution, resumed } = this.#args;
    // metadata.current() reads the run's metadata from the first line of the code on.
    await execution.metadata.load();
    try {
      if (task.parsePayload) this.#payload = await task.parsePayload(this.#payload);
    } catch (error) {
      return { kind: "failed", error: new TaskPayloadParsedError(error), retryAt: null };
    }
    if (this.#waitHooks().length > 0 || this.#resumeHooks().length > 0) execution.listenToWaits({ waited: (wait, suspended) => this.#waited(wait, suspended), resumed: (wait) => this.#resumed(wait) });
    const middleware = [...globalHooksOf("middleware"), ...(task.middleware ? [task.middleware] : [])];
    if (resumed && (task.init || middleware.length > 0)) execution.notices.say("init-per-execution", this.#runRef());
    let outcome: AttemptOutcome | undefined;
    const chain = middleware.reduceRight<() => Promise<void>>(
      (next, hook) => () => hook({ ...this.#base(), next }),
      async () => {
        outcome = await this.#attempt();
      },
    );
    try {
      await chain();
    } catch (error) {
      // A middleware's own error (the attempt's are outcomes): retried as the task's settings say.
      await this.cleanup();
      return { kind: "failed", error, retryAt: this.#args.decide(error)?.at ?? null };
    }
    if (!outcome) {
      const error = new Error(`a middleware of task "${task.id}" returned without calling next(): the task did not run`);
      return { kind: "failed", error, retryAt: null };
    }
    return outcome;
  }

  /** The execution suspended the run at a wait: cleanup, as at the end of every execution. */
  async suspended(): Promise<void> {
    if (this.#args.task.cleanup && !this.#cleaned) this.#args.execution.notices.say("cleanup-at-wait", this.#runRef());
    await this.cleanup();
  }

  /**
   * The execution was aborted: onCancel when `canceled()` confirms the run was canceled (not its
   * worker stopping, nor its run taken over), then cleanup.
   */
  async aborted(canceled: () => Promise<boolean>): Promise<void> {
    const hooks = [...globalHooksOf("cancel"), ...(this.#args.task.onCancel ? [this.#args.task.onCancel] : [])];
    // Not knowing (the database is away as the worker stops) counts as not canceled: cleanup still runs.
    const confirmed = hooks.length > 0 && (await canceled().catch((error: unknown) => (logger.error("could not tell whether the run was canceled; onCancel not called", { error: describe(error) }), false)));
    if (confirmed) {
      const runPromise = this.#runPromise ?? new Promise<never>(() => {});
      for (const hook of hooks) await this.#logged("onCancel", () => hook({ ...this.#base(), runPromise, init: this.#init }));
    }
    await this.cleanup();
  }

  /** The execution was stopped another way (maxDuration, lost claim): cleanup. */
  async stopped(): Promise<void> {
    await this.cleanup();
  }

  /** Runs the task's cleanup once per execution; its errors are logged. */
  async cleanup(): Promise<void> {
    if (this.#cleaned) return;
    this.#cleaned = true;
    const cleanup = this.#args.task.cleanup;
    if (cleanup) await this.#logged("cleanup", () => cleanup({ ...this.#base(), init: this.#init }));
  }

  async #attempt(): Promise<AttemptOutcome> {
    const { task, execution } = this.#args;
    let output: unknown;
    try {
      this.#init = task.init ? ((await task.init(this.#base())) ?? undefined) : undefined;
      const start = [...globalHooksOf("start"), ...(task.onStart ? [task.onStart] : [])];
      if (start.length > 0) await execution.once("onStart", "run", () => this.#each(start, { init: this.#init }));
      const startAttempt = [...globalHooksOf("startAttempt"), ...(task.onStartAttempt ? [task.onStartAttempt] : [])];
      if (startAttempt.length > 0) await execution.once("onStartAttempt", "attempt", () => this.#each(startAttempt, {}));
      this.#runPromise = Promise.resolve(task.run(this.#payload, { ctx: execution.ctx, init: this.#init, signal: this.#args.signal }));
      output = await this.#runPromise;
      await this.#args.afterRun?.();
    } catch (error) {
      const decided = await this.#afterError(error);
      if (decided.retryAt === null) {
        for (const hook of [...globalHooksOf("failure"), ...(task.onFailure ? [task.onFailure] : [])]) {
          await this.#logged("onFailure", () => hook({ ...this.#base(), error: decided.error, init: this.#init }));
        }
        await this.#complete({ ok: false, error: decided.error });
      }
      await this.cleanup();
      // What the code and its hooks changed of the metadata is stored before the attempt's end.
      await execution.metadata.flush();
      return { kind: "failed", error: decided.error, retryAt: decided.retryAt };
    }
    for (const hook of [...globalHooksOf("success"), ...(task.onSuccess ? [task.onSuccess] : [])]) {
      await this.#logged("onSuccess", () => hook({ ...this.#base(), output, init: this.#init }));
    }
    await this.#complete({ ok: true, data: output });
    await this.cleanup();
    await execution.metadata.flush();
    return { kind: "returned", output };
  }

  async #complete(result: { ok: true; data: unknown } | { ok: false; error: unknown }): Promise<void> {
    for (const hook of [...globalHooksOf("complete"), ...(this.#args.task.onComplete ? [this.#args.task.onComplete] : [])]) {
      await this.#logged("onComplete", () => hook({ ...this.#base(), result, init: this.#init }));
    }
  }

  /** Whether and when to retry after `error`: the task's settings, as catchError (the task's, then the global ones) changes them. */
  async #afterError(error: unknown): Promise<{ error: unknown; retryAt: Date | null }> {
    const { task, decide, isInternal } = this.#args;
    if (skipsRetrying(error) || isInternal?.(error)) return { error, retryAt: null };
    const byPolicy = decide(error);
    const catchers = [...(task.catchError ?? task.handleError ? [(task.catchError ?? task.handleError)!] : []), ...globalHooksOf("catchError")];
    for (const hook of catchers) {
      let result: void | HandleErrorModificationOptions | undefined;
      try {
        result = await hook({
          ...this.#base(),
          error,
          ...(task.retry ? { retry: task.retry } : {}),
          ...(byPolicy ? { retryAt: byPolicy.at, retryDelayInMs: byPolicy.delayMs } : {}),
          init: this.#init,
        });
      } catch (hookError) {
        logger.error(`catchError of task "${task.id}" threw; the task's retry settings apply`, { error: describe(hookError) });
        return { error, retryAt: byPolicy?.at ?? null };
      }
      if (result) return this.#modified(error, result, byPolicy);
    }
    return { error, retryAt: byPolicy?.at ?? null };
  }

  #modified(error: unknown, result: HandleErrorModificationOptions, byPolicy: { at: Date } | null): { error: unknown; retryAt: Date | null } {
    const recorded = result.error ?? error;
    if (result.skipRetrying) return { error: recorded, retryAt: null };
    // catchError chooses when, not how many: a retry needs an attempt left (or its own `retry` settings).
    if (result.retryAt instanceof Date) return { error: recorded, retryAt: byPolicy ? result.retryAt : null };
    if (typeof result.retryDelayInMs === "number") return { error: recorded, retryAt: byPolicy ? new Date(this.#args.execution.now().getTime() + result.retryDelayInMs) : null };
    if (result.retry && typeof result.retry === "object") return { error: recorded, retryAt: this.#args.decide(error, result.retry)?.at ?? null };
    // Trigger.dev: a result that says none of these fails the run.
    return { error: recorded, retryAt: null };
  }

  async #waited(wait: TaskWait, suspended: boolean): Promise<void> {
    if (suspended) this.#args.execution.notices.say("on-wait-after-checkpoint", this.#runRef());
    for (const hook of this.#waitHooks()) await hook({ ...this.#base(), wait, init: this.#init });
  }

  async #resumed(wait: TaskWait): Promise<void> {
    for (const hook of this.#resumeHooks()) await hook({ ...this.#base(), wait, init: this.#init });
  }

  #waitHooks() {
    return [...globalHooksOf("wait"), ...(this.#args.task.onWait ? [this.#args.task.onWait] : [])];
  }

  #resumeHooks() {
    return [...globalHooksOf("resume"), ...(this.#args.task.onResume ? [this.#args.task.onResume] : [])];
  }

  async #each(hooks: ((params: any) => unknown)[], extra: object): Promise<void> {
    for (const hook of hooks) await hook({ ...this.#base(), ...extra });
  }

  /** Runs a hook whose error cannot change the run's outcome any more: logged (Trigger.dev ignores them). */
  async #logged(name: string, hook: () => unknown): Promise<void> {
    try {
      await hook();
    } catch (error) {
      logger.error(`${name} of task "${this.#args.task.id}" threw`, { error: describe(error) });
    }
  }

  #base() {
    return { ctx: this.#args.execution.ctx, payload: this.#payload, task: this.#args.task.id, signal: this.#args.signal };
  }

  #runRef() {
    const { ctx } = this.#args.execution;
    return { id: ctx.run.id, attempt: ctx.attempt.number, taskId: ctx.task.id };
  }
}

function describe(error: unknown): unknown {
  return error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : error;
}
