import { tasksClient } from "../client/global.ts";
import type { BatchHandle, BatchItem, BatchTriggerOptions, RunHandle, TriggerOptions } from "../client/tasks.ts";
import { never } from "./never.ts";
import { currentExecution, type RunExecution } from "./run-context.ts";
import { currentStep } from "./step-scope.ts";

/** Inside a run, code abandoned at suspension must not act for the run: its calls never settle. */
function fenced(execution: RunExecution | undefined): boolean {
  return execution?.isFenced() ?? false;
}

/** A trigger inside a run that a replay would make again: said once (see REPLAY_NOTICES). */
function noticeReplayedTrigger(execution: RunExecution, keyed: boolean): void {
  if (keyed || currentStep() !== undefined || execution.isReplaying()) return;
  execution.notices.say("trigger-outside-step", { id: execution.ctx.run.id, attempt: execution.ctx.attempt.number, taskId: execution.ctx.task.id });
}

/**
 * Triggers a run over the API and returns at once. Inside a run the new run records its parent
 * (as Trigger.dev does) and inherits `isTest`. It is an API call like any other: before a wait,
 * a replay makes it again — wrap it in `step.run` or give it an `idempotencyKey`.
 */
export function triggerTask(taskId: string, payload: unknown, options?: TriggerOptions): Promise<RunHandle> {
  const execution = currentExecution();
  if (!execution) return tasksClient.trigger(taskId, payload, options);
  if (fenced(execution)) return never();
  noticeReplayedTrigger(execution, options?.idempotencyKey !== undefined);
  return tasksClient.trigger(taskId, payload, { ...(execution.ctx.run.isTest ? { test: true } : {}), ...options, parentRunId: execution.ctx.run.id });
}

/** Triggers runs of one task as a batch over the API; inside a run, see triggerTask. */
export function batchTriggerTask(taskId: string, items: BatchItem<unknown>[], options?: BatchTriggerOptions): Promise<BatchHandle> {
  const execution = currentExecution();
  if (!execution) return tasksClient.batchTrigger(taskId, items, options);
  if (fenced(execution)) return never();
  noticeReplayedTrigger(execution, options?.idempotencyKey !== undefined);
  const parented = items.map((item) => ({ ...item, options: { ...(execution.ctx.run.isTest ? { test: true } : {}), ...item.options, parentRunId: execution.ctx.run.id } }));
  return tasksClient.batchTrigger(taskId, parented, options);
}
