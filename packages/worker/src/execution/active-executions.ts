/** One execution this process is running. */
export interface ActiveExecution {
  runId: string;
  claimToken: string;
  abort: AbortController;
}

/**
 * Executions this process is running (cancel, lease renewal and the lost-execution check look
 * here). One run can have two: an execution that stalled past its lease, and the
 * takeover this same worker claimed; each is its own entry, by claim token.
 */
export class ActiveExecutions {
  readonly #byToken = new Map<string, ActiveExecution>();

  add(execution: ActiveExecution): void {
    this.#byToken.set(execution.claimToken, execution);
  }

  remove(execution: ActiveExecution): void {
    this.#byToken.delete(execution.claimToken);
  }

  get size(): number {
    return this.#byToken.size;
  }

  all(): ActiveExecution[] {
    return [...this.#byToken.values()];
  }

  /** Aborts every execution of `runId` this process runs. */
  abortRun(runId: string, reason: Error): void {
    for (const execution of this.#byToken.values()) if (execution.runId === runId) execution.abort.abort(reason);
  }

  /** Aborts the execution holding `claimToken`, if it is still running here. */
  abortExecution(claimToken: string, reason: Error): void {
    this.#byToken.get(claimToken)?.abort.abort(reason);
  }

  /** What each execution's lease is known by. */
  leases(): { runId: string; claimToken: string }[] {
    return this.all().map((e) => ({ runId: e.runId, claimToken: e.claimToken }));
  }
}
