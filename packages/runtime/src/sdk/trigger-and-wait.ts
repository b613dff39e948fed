import { requireExecution, type ChildRunResult } from "./run-context.ts";

export type TaskRunResult<T> = ({ ok: true; id: string; taskIdentifier: string; output: T } | { ok: false; id: string; taskIdentifier: string; error: unknown }) & {
  /** The child's output when it completed; throws its error otherwise. */
  unwrap(): T;
};

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

/**
 * Triggers a child run and waits for it (checkpointed: this run gives its slot back meanwhile).
 *
 * @example
 * const result = await tasks.triggerAndWait("resize-image", { url });
 * if (result.ok) console.log(result.output);
 */
export async function triggerAndWait<T = unknown>(taskId: string, payload?: unknown, options?: Record<string, unknown>): Promise<TaskRunResult<T>> {
  return toRunResult<T>(await requireExecution("tasks.triggerAndWait").triggerAndWait(taskId, payload, options));
}

/**
 * Triggers several runs of one task and waits for all of them.
 *
 * @example
 * const results = await tasks.batchTriggerAndWait("resize-image", [{ payload: { url: a } }, { payload: { url: b } }]);
 */
export async function batchTriggerAndWait<T = unknown>(taskId: string, items: { payload: unknown; options?: Record<string, unknown> }[]): Promise<{ runs: TaskRunResult<T>[] }> {
  const raws = await requireExecution("tasks.batchTriggerAndWait").batchTriggerAndWait(taskId, items);
  return { runs: raws.map((r) => toRunResult<T>(r)) };
}
