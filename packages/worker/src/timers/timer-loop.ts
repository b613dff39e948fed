import { fireAllDue, NO_RUN_TALLY, type DueWork, type EngineDeps, type RunTally } from "@svc/runtime/engine";

/**
 * Fires time-driven work (delays, retries, TTLs, token timeouts, sleeps, schedules, lapsed leases)
 * when it is due: sleeps until the earliest due time (at most `maxSleepMs`), and wakes early on a
 * `svc_timers` NOTIFY when something new was scheduled. Every worker runs one; SKIP LOCKED makes
 * each item fire once.
 */
export class TimerLoop {
  readonly #deps: EngineDeps;
  readonly #work: DueWork[];
  readonly #maxSleepMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #tally: RunTally;
  #stopped = true;
  /** Aborted by stop(): long work (the retention sweep) stops between its transactions. */
  #abort = new AbortController();
  #wake: (() => void) | null = null;
  #loop: Promise<void> | null = null;

  /** `tally` hears of the runs the work created (scheduled runs) and ended (EXPIRED, CRASHED). */
  constructor(deps: EngineDeps, work: DueWork[], options: { maxSleepMs: number; onError: (error: unknown) => void; tally?: RunTally }) {
    this.#deps = deps;
    this.#work = work;
    this.#maxSleepMs = options.maxSleepMs;
    this.#onError = options.onError;
    this.#tally = options.tally ?? NO_RUN_TALLY;
  }

  /**
   * Fires everything due now (tests call this with a FakeClock instead of running the loop). While
   * the loop runs, its stop() ends a tick between two transactions of long work.
   */
  tick(): Promise<Record<string, number>> {
    const signal = this.#stopped ? undefined : this.#abort.signal;
    return fireAllDue(this.#deps, this.#deps.clock.now(), this.#work, { tally: this.#tally, signal });
  }

  start(): void {
    this.#stopped = false;
    this.#abort = new AbortController();
    this.#loop = this.#run();
  }

  wake(): void {
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let sleepMs = this.#maxSleepMs;
      try {
        await this.tick();
        // After a failed pass (some work failed; the rest fired) the loop waits its longest sleep:
        // work that keeps failing while overdue must not turn it into a busy loop.
        const dues = await Promise.all(this.#work.map((w) => w.nextDue(this.#deps.db)));
        const now = this.#deps.clock.now().getTime();
        for (const due of dues) if (due) sleepMs = Math.min(sleepMs, Math.max(0, due.getTime() - now));
      } catch (error) {
        this.#onError(error);
      }
      if (this.#stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, sleepMs);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = null;
    }
  }
}
