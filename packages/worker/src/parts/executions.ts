import { ActiveExecutions } from "../execution/active-executions.ts";
import { executeRun, type Dispatch } from "../execution/execute-run.ts";
import type { ExecutionBatchers, ExecutorDeps } from "../execution/executor-deps.ts";
import type { WorkerResources } from "./resources.ts";

/** The executions this worker runs: how one is run (claim, task code, finish) and the ones running now. */
export class Executions {
  readonly active = new ActiveExecutions();
  readonly #deps: ExecutorDeps;

  constructor({ engine, worker, events, tally, hooks, tracer, ledgers }: WorkerResources, batchers: ExecutionBatchers) {
    this.#deps = { engine, worker, events, tally, hooks, batchers, tracer, ledgers };
  }

  /** Claims and executes one run (see executeRun); `release` frees its slot once the task code is done. */
  run(dispatch: Dispatch, release?: () => void): Promise<void> {
    return executeRun(this.#deps, this.active, dispatch, release);
  }

  /** Aborts every execution (the worker was abandoned). */
  abortAll(reason: Error): void {
    for (const execution of this.active.all()) execution.abort.abort(reason);
  }
}
