import type { BatchItem, TriggerOptions } from "../client/tasks.ts";
import { requireExecution, type ChildRunResult } from "./run-context.ts";
import { SubtaskUnwrapError } from "./task-errors.ts";

export type TaskRunResult<T> = ({ ok: true; id: string; taskIdentifier: string; output: T } | { ok: false; id: string; taskIdentifier: string; error: unknown }) & {
  /** The child's output when it completed; throws its error otherwise. */
  unwrap(): T;
};

/** A triggerAndWait's promise; `.unwrap()` resolves to the child's output or throws a SubtaskUnwrapError (Trigger.dev's TaskRunPromise). */
export type TaskRunPromise<T> = Promise<TaskRunResult<T>> & {
  readonly taskId: string;
  unwrap(): Promise<T>;
};

/** A batchTriggerAndWait's results, in the order of the items. */
export interface BatchResult<T> {
  runs: TaskRunResult<T>[];
}

/** Options of a child run a parent waits for: a trigger's, but not `delay` (Trigger.dev's TriggerAndWaitOptions). */
export type TriggerAndWaitOptions = Omit<TriggerOptions, "delay" | "parentRunId">;

function toRunResult<T>(raw: ChildRunResult): TaskRunResult<T> {
  if (raw.ok) return { ok: true, id: raw.id, taskIdentifier: raw.taskIdentifier, output: raw.output as T, unwrap: () => raw.output as T };
  const error = Object.assign(new Error(raw.error?.message ?? "child run failed"), { name: raw.error?.name ?? "Error" });
  return {
    ok: false,
    id: raw.id,
    taskIdentifier: raw.taskIdentifier,
    error: raw.error,
    unwrap: () => {
      throw error;
    },
  };
}

/** `promise` with Trigger.dev's `.unwrap()`: the output, or a SubtaskUnwrapError. */
export function runPromise<T>(taskId: string, promise: Promise<TaskRunResult<T>>): TaskRunPromise<T> {
  return Object.assign(promise, {
    taskId,
    unwrap: () =>
      promise.then((result) => {
        if (result.ok) return result.output;
        throw new SubtaskUnwrapError(taskId, result.id, result.error);
      }),
  });
}

/**
 * Triggers a child run and waits for it (checkpointed: this run gives its slot back meanwhile).
 * The child is triggered once, in the transaction that records the wait: a replay waits on the
 * same child.
 *
 * @example
 * const result = await tasks.triggerAndWait("resize-image", { url });
 * if (result.ok) console.log(result.output);
 * const output = await tasks.triggerAndWait<typeof resizeImage>("resize-image", { url }).unwrap();
 */
export function triggerAndWait<T = unknown>(taskId: string, payload?: unknown, options?: TriggerAndWaitOptions): TaskRunPromise<T> {
  return runPromise(taskId, (async () => toRunResult<T>(await requireExecution("tasks.triggerAndWait").triggerAndWait(taskId, payload, options as Record<string, unknown> | undefined)))());
}

/**
 * Triggers several runs of one task and waits for all of them.
 *
 * @example
 * const { runs } = await tasks.batchTriggerAndWait("resize-image", [{ payload: { url: a } }, { payload: { url: b } }]);
 */
export async function batchTriggerAndWait<T = unknown>(taskId: string, items: BatchItem<unknown>[]): Promise<BatchResult<T>> {
  const raws = await requireExecution("tasks.batchTriggerAndWait").batchTriggerAndWait(taskId, items as { payload: unknown; options?: Record<string, unknown> }[]);
  return { runs: raws.map((r) => toRunResult<T>(r)) };
}
