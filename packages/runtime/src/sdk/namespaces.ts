import { schedulesClient, sessionsClient, tasksClient, waitClient } from "../client/global.ts";
import type { BatchHandle, BatchItem, BatchTriggerOptions, RunHandle, TriggerOptions } from "../client/tasks.ts";
import { registerGlobalHook, type GlobalHookFunctions, type GlobalHookKind } from "./hooks/global-hooks.ts";
import { never } from "./never.ts";
import { currentExecution } from "./run-context.ts";
import { schedules as scheduleTasks } from "./schedules-task.ts";
import type { AnyTask, TaskIdentifier, TaskOutput, TaskPayload } from "./task.ts";
import { batchTriggerAndWait, triggerAndWait, type BatchResult, type TaskRunPromise, type TriggerAndWaitOptions } from "./trigger-and-wait.ts";
import { batchTriggerTask, triggerTask } from "./trigger.ts";
import { createTokenInRun, forToken, waitFor, waitUntil } from "./wait.ts";
import { RunSession } from "./session-channels.ts";

/** `T` of `tasks.trigger<T>(…)`: a task's type (`typeof myTask`, as in Trigger.dev), or the output type alone. */
type IdOf<T> = T extends AnyTask ? TaskIdentifier<T> : string;
type PayloadOf<T> = T extends AnyTask ? TaskPayload<T> : unknown;
type OutputOf<T> = T extends AnyTask ? TaskOutput<T> : T;

/** Registers a global hook, optionally by name: `tasks.onStart(fn)` or `tasks.onStart("name", fn)`. Returns the function that removes it. */
function globalHook<K extends GlobalHookKind>(kind: K) {
  function register(fn: GlobalHookFunctions[K]): () => void;
  function register(name: string, fn: GlobalHookFunctions[K]): () => void;
  function register(nameOrFn: string | GlobalHookFunctions[K], fn?: GlobalHookFunctions[K]): () => void {
    return registerGlobalHook(kind, nameOrFn, fn);
  }
  return register;
}


/** Inside a run, code abandoned at suspension must not act for the run: its calls never settle. */
function fencedCall<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args: A) => (currentExecution()?.isFenced() ? never() : fn(...args));
}

/**
 * Trigger tasks: `trigger`/`batchTrigger` from anywhere (over HTTP); `triggerAndWait` and
 * `batchTriggerAndWait` inside a run (checkpointed while the children run). The type parameter
 * is a task's type (`tasks.trigger<typeof myTask>("my-task", …)`, as in Trigger.dev) or the
 * output type alone.
 *
 * Global lifecycle hooks, for every task this worker runs (Trigger.dev's): `onStart`,
 * `onStartAttempt`, `onSuccess`, `onFailure`, `onComplete`, `onWait`, `onResume`, `onCancel`,
 * `catchError` (alias `handleError`) and `middleware`; global ones run before the task's own
 * (catchError: after). What each means when a run is replayed after a wait: TaskOptions.
 *
 * @example
 * const handle = await tasks.trigger("hello-world", { name: "Ada" });
 * // inside a task:
 * const result = await tasks.triggerAndWait("resize", { url });
 * // in a task file, for every task:
 * tasks.onFailure(({ ctx, error }) => logger.error("run failed", { run: ctx.run.id, error }));
 */
export const tasks = {
  trigger: <T = unknown>(taskId: IdOf<T>, payload?: PayloadOf<T>, options?: TriggerOptions): Promise<RunHandle> => triggerTask(taskId, payload, options),
  batchTrigger: <T = unknown>(taskId: IdOf<T>, items: BatchItem<PayloadOf<T>>[], options?: BatchTriggerOptions): Promise<BatchHandle> => batchTriggerTask(taskId, items, options),
  batchTriggerItems: fencedCall(tasksClient.batchTriggerItems),
  triggerAndWait: <T = unknown>(taskId: IdOf<T>, payload?: PayloadOf<T>, options?: TriggerAndWaitOptions): TaskRunPromise<OutputOf<T>> => triggerAndWait<OutputOf<T>>(taskId, payload, options),
  batchTriggerAndWait: <T = unknown>(taskId: IdOf<T>, items: { payload: PayloadOf<T>; options?: TriggerAndWaitOptions }[]): Promise<BatchResult<OutputOf<T>>> =>
    batchTriggerAndWait<OutputOf<T>>(taskId, items),
  onStart: globalHook("start"),
  onStartAttempt: globalHook("startAttempt"),
  onSuccess: globalHook("success"),
  onFailure: globalHook("failure"),
  onComplete: globalHook("complete"),
  onWait: globalHook("wait"),
  onResume: globalHook("resume"),
  onCancel: globalHook("cancel"),
  catchError: globalHook("catchError"),
  /** @deprecated Trigger.dev v4's old name of `catchError`. */
  handleError: globalHook("catchError"),
  middleware: globalHook("middleware"),
};

/**
 * Waits and waitpoint tokens. `forToken`, `for`, `until` only inside a run; `createToken` inside a
 * run is recorded in the run's ledger (a resumed run gets the same token back), outside it calls the API.
 *
 * @example
 * const token = await wait.createToken({ timeout: "1h", tags: ["approval"] });
 * const result = await wait.forToken<{ ok: boolean }>(token);
 * await wait.for({ minutes: 5 });
 * await wait.completeToken(token.id, { ok: true }); // e.g. from your backend
 */
export const wait = {
  forToken,
  for: waitFor,
  until: waitUntil,
  createToken: (options: Parameters<typeof waitClient.createToken>[0] = {}) =>
    currentExecution() ? createTokenInRun(options as Parameters<typeof createTokenInRun>[0]) : waitClient.createToken(options),
  completeToken: fencedCall(waitClient.completeToken),
  retrieveToken: waitClient.retrieveToken,
  listTokens: waitClient.listTokens,
};

/**
 * Cron schedules: `schedules.task({ id, cron, run })` declares one in code; `create/list/…` manage
 * imperative schedules over the API.
 *
 * @example
 * export const nightly = schedules.task({ id: "nightly", cron: "0 3 * * *", run: async (p) => p.timestamp });
 * await schedules.create({ task: "nightly", cron: "0 9 * * 1", deduplicationKey: "weekly" });
 */
export const schedules = { ...schedulesClient, task: scheduleTasks.task };

/**
 * Sessions: long-lived conversations with `.in` (clients → runs) and `.out` (runs → clients)
 * channels. From a backend: `start`, `retrieve`, `update`, `close`, `list`, `listRuns`, and
 * `open(id)`'s `in.append()`, `out.subscribe()`, `out.records()` (over HTTP). Inside a run,
 * `sessions.open(payload.sessionId)` gives `in.wait()` (checkpointed), `in.peek()`,
 * `out.append()`, `out.writer()`, `out.writeControl()`, `out.trimTo()` and `endAndContinue()`.
 *
 * @example
 * export const chat = task({ id: "chat-agent", run: async (payload: { sessionId: string }) => {
 *   const session = sessions.open(payload.sessionId);
 *   for (;;) {
 *     const message = await session.in.wait<{ text: string }>({ timeout: "1h" });
 *     if (!message.ok) return;
 *     await session.out.append({ text: `You said: ${message.output.text}` });
 *     await session.out.writeControl("turn-complete");
 *   }
 * }});
 */
export const sessions = {
  start: sessionsClient.start,
  retrieve: sessionsClient.retrieve,
  update: sessionsClient.update,
  close: sessionsClient.close,
  list: sessionsClient.list,
  listRuns: sessionsClient.listRuns,
  endAndContinue: sessionsClient.endAndContinue,
  append: sessionsClient.append,
  records: sessionsClient.records,
  subscribe: sessionsClient.subscribe,
  /** A handle on a session's channels (no call is made until you use it). */
  open: <TIn = unknown, TOut = unknown>(sessionIdOrExternalId: string) => new RunSession<TIn, TOut>(sessionIdOrExternalId),
};
