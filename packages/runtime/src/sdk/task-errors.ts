// Errors task code throws or meets, with Trigger.dev's names (the worker and retries look at the names).

/**
 * Throw it to fail the run at once: no retry, whatever attempts are left (catchError is not asked).
 *
 * @example
 * if (!payload.userId) throw new AbortTaskRunError("no user to notify");
 */
export class AbortTaskRunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AbortTaskRunError";
  }
}

/** The payload did not pass a schemaTask's schema: the run fails without retry and without hooks. */
export class TaskPayloadParsedError extends Error {
  override readonly cause: unknown;
  constructor(cause: unknown) {
    super(`Parsing payload with schema failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "TaskPayloadParsedError";
    this.cause = cause;
  }
}

/** Thrown by `triggerAndWait(…).unwrap()` when the child run failed; `cause` is its error. */
export class SubtaskUnwrapError extends Error {
  readonly taskId: string;
  readonly runId: string;
  override readonly cause: unknown;
  constructor(taskId: string, runId: string, subtaskError: unknown) {
    const message = (subtaskError as { message?: unknown } | null)?.message;
    super(typeof message === "string" ? `Error in ${taskId}: ${message}` : `Error in ${taskId}`);
    this.name = "SubtaskUnwrapError";
    this.taskId = taskId;
    this.runId = runId;
    this.cause = subtaskError;
  }
}

/** Whether the run must not be retried after `error`, as Trigger.dev decides by its name. */
export function skipsRetrying(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "AbortTaskRunError" || name === "TaskPayloadParsedError";
}
