import type { Queryable } from "../db/queryable.ts";
import type { TaskWait, WaitListener } from "../sdk/run-context.ts";
import { describeWait } from "./describe-wait.ts";
import type { LedgerSession } from "./replay.ts";

type StepKey = { stepKey: string; epoch: number };

/** What WaitHooks uses of its execution. */
export interface WaitHooksExecution {
  db: Queryable;
  environmentId: string;
  ledger: LedgerSession;
  /** Runs `fn` once per attempt under `name` (recorded). */
  once(name: string, scope: "attempt", fn: () => Promise<void>): Promise<boolean>;
  /** An onWait that failed after its wait suspended the run: nothing can be told of it but the log. */
  report(error: unknown): void;
}

/**
 * A task's onWait and onResume hooks around its waits (tokens, sleeps, child runs, batches).
 * onWait: once per wait, when the code first reaches it, after it is recorded. onResume: once per
 * wait, when its result is first handed to the code in an attempt (a named ledger record, so a
 * replay passing the wait again does not call it). Nothing is read or written when no hook listens.
 */
export class WaitHooks {
  #listener: WaitListener | null = null;
  /** The waits this execution reached first (their onWait is due). */
  readonly #fresh = new Set<string>();

  constructor(private readonly execution: WaitHooksExecution) {}

  listen(listener: WaitListener | null): void {
    this.#listener = listener;
  }

  /** A wait with no record yet is about to be registered. */
  reached(key: StepKey, fresh: boolean): void {
    if (this.#listener && fresh) this.#fresh.add(idOf(key));
  }

  /**
   * The wait at `key` returns `result` to the code: onWait if it was just reached, onResume once.
   * Without hooks, `result` itself (no promise more per wait on the replay path).
   */
  passed<T>(key: StepKey, result: T): T | Promise<T> {
    const listener = this.#listener;
    if (!listener) return result;
    const waitpointId = this.execution.ledger.at(key)?.waitpointId;
    if (!waitpointId) return result;
    return this.#passed(key, result, listener, waitpointId);
  }

  async #passed<T>(key: StepKey, result: T, listener: WaitListener, waitpointId: string): Promise<T> {
    let wait: Promise<TaskWait | null> | undefined;
    const described = () => (wait ??= describeWait(this.execution.db, this.execution.environmentId, waitpointId));
    if (this.#fresh.delete(idOf(key))) {
      const w = await described();
      if (w) await listener.waited(w, false);
    }
    await this.execution.once(`onResume:${key.epoch}:${key.stepKey}`, "attempt", async () => {
      const w = await described();
      if (w) await listener.resumed(w);
    });
    return result;
  }

  /**
   * The wait at `key` suspended the run (the execution is fenced): onWait when the code reached it
   * first here, then `end()`. Resolves when both are done; onWait's errors are reported.
   */
  async suspended(key: StepKey, end: () => void): Promise<void> {
    const listener = this.#listener;
    try {
      if (listener && this.#fresh.delete(idOf(key))) {
        const waitpointId = this.execution.ledger.at(key)?.waitpointId;
        const wait = waitpointId ? await describeWait(this.execution.db, this.execution.environmentId, waitpointId) : null;
        if (wait) await listener.waited(wait, true);
      }
    } catch (error) {
      this.execution.report(error);
    } finally {
      end();
    }
  }
}

function idOf(key: StepKey): string {
  return `${key.epoch}|${key.stepKey}`;
}
