import { schedulesClient, sessionsClient, tasksClient, waitClient } from "../client/global.ts";
import { never } from "./never.ts";
import { currentExecution } from "./run-context.ts";
import { schedules as scheduleTasks } from "./schedules-task.ts";
import { batchTriggerAndWait, triggerAndWait } from "./trigger-and-wait.ts";
import { createTokenInRun, forToken, waitFor, waitUntil } from "./wait.ts";
import { RunSession } from "./session-channels.ts";


/** Inside a run, code abandoned at suspension must not act for the run: its calls never settle. */
function fencedCall<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args: A) => (currentExecution()?.isFenced() ? never() : fn(...args));
}

/**
 * Trigger tasks: `trigger`/`batchTrigger` from anywhere (over HTTP); `triggerAndWait` and
 * `batchTriggerAndWait` inside a run (checkpointed while the children run).
 *
 * @example
 * const handle = await tasks.trigger("hello-world", { name: "Ada" });
 * // inside a task:
 * const result = await tasks.triggerAndWait("resize", { url });
 */
export const tasks = {
  trigger: fencedCall((taskId: string, payload?: unknown, options?: Parameters<typeof tasksClient.trigger>[2]) => {
    const execution = currentExecution();
    // A trigger from inside a run records its parent (relatedRuns), as Trigger.dev does.
    const withParent = execution ? { ...options, parentRunId: execution.ctx.run.id } : options;
    return tasksClient.trigger(taskId, payload, withParent as Parameters<typeof tasksClient.trigger>[2]);
  }),
  batchTrigger: fencedCall(tasksClient.batchTrigger),
  batchTriggerItems: fencedCall(tasksClient.batchTriggerItems),
  triggerAndWait,
  batchTriggerAndWait,
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
