/**
 * One system measured by the peers scenario (svc, graphile-worker, DBOS Transact), started in a
 * fresh database of its own, its worker in this process.
 */
export interface PeerSide<W = unknown> {
  readonly name: string;
  /** Starts one unit of work (a run, a job, a workflow) and resolves once it is done: its ending is acknowledged by Postgres. */
  runOne(): Promise<void>;
  /** `count` units, each waiting for its signal; resolves once all of them wait. */
  waiting(count: number): Promise<W[]>;
  /**
   * Sends the signal that ends `w`'s wait and resolves once it is sent (acknowledged), with
   * promises armed before it was sent: when the code after the wait ran, and when the unit is done.
   */
  resume(w: W): Promise<{ resumed: Promise<number>; finished: Promise<unknown> }>;
  /** Rows only this side has (other ways to reach the same point), one sample list each. */
  extra?(n: number): Promise<{ label: string; samples: number[] }[]>;
  close(): Promise<void>;
}

/**
 * Ids of units that are done, matched with whoever waits for them: a unit may be done before the
 * call that started it has returned its id (the worker is in this process).
 */
export class Completions {
  readonly #early = new Set<string>();
  readonly #waiters = new Map<string, () => void>();

  done(id: string): void {
    const waiter = this.#waiters.get(id);
    if (waiter) {
      this.#waiters.delete(id);
      waiter();
    } else this.#early.add(id);
  }

  wait(id: string): Promise<void> {
    if (this.#early.delete(id)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.set(id, resolve));
  }
}

/** Resolvers keyed by a unit's key: its code calls `reached(key)` where the measured span ends. */
export class Marks {
  readonly #marks = new Map<string, (at: number) => void>();

  expect(key: string): Promise<number> {
    return new Promise((resolve) => this.#marks.set(key, resolve));
  }

  reached(key: string): void {
    const mark = this.#marks.get(key);
    this.#marks.delete(key);
    mark?.(performance.now());
  }
}
