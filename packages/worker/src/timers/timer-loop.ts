import { fireAllDue, nextDueTimes, NO_RUN_TALLY, type DueWork, type EngineDeps, type RunTally } from "@svc/runtime/engine";

/** How soon a pass that found work due but fired none of it looks again. */
const NOTHING_FIRED_RETRY_MS = 50;

/**
 * Fires time-driven work (delays, retries, TTLs, token timeouts, sleeps, schedules, lapsed leases)
 * when it is due: sleeps until the earliest due time (at most `maxSleepMs`), and wakes early on a
 * `svc_timers` NOTIFY when something new was scheduled. Every worker runs one; SKIP LOCKED makes
 * each item fire once.
 *
 * A NOTIFY that names when its item is due (a token's timeout, a schedule's next run) wakes the
 * loop only if that is before its next wake-up, and then at that time: every worker hears every
 * token created with a timeout, and a pass is a statement per kind of work, so waking each loop
 * for a timeout due in an hour would cost workers × statements per token.
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
  /** While the loop sleeps: when it wakes (epoch ms by the engine's clock), and how to make that sooner. */
  #sleep: { until: number; wakeAt(atMs: number): void } | null = null;
  /** The earliest wake-up asked for while a pass ran (epoch ms; -Infinity: at once); null: none. */
  #askedDuringPass: number | null = null;
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

  /** When the sleeping loop wakes next, by the engine's clock; null while a pass runs (or stopped). */
  get nextWakeAt(): Date | null {
    return this.#sleep ? new Date(this.#sleep.until) : null;
  }

  /**
   * Something new is due at `at`, or now (no time). A time after the loop's next wake-up changes
   * nothing: that pass finds the item, and the loop's next sleep ends when it is due. Asked while
   * a pass runs, the loop sleeps no longer than `at` after it (the pass may have looked too soon).
   */
  wake(at?: Date): void {
    const atMs = at ? at.getTime() : -Infinity;
    const when = Number.isNaN(atMs) ? -Infinity : atMs;
    if (this.#sleep) {
      if (when < this.#sleep.until) this.#sleep.wakeAt(when);
      return;
    }
    this.#askedDuringPass = Math.min(this.#askedDuringPass ?? Infinity, when);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#sleep?.wakeAt(-Infinity);
    await this.#loop;
  }

  /**
   * A pass first asks when each kind of work is next due, in one statement (nextDueTimes), and
   * fires only the kinds whose time has come, then asks again: a pass that finds nothing due is
   * that one statement, where firing every kind was a transaction each (~25 statements a second on
   * every idle worker). Then it sleeps until the earliest due time, at most maxSleepMs.
   */
  async #run(): Promise<void> {
    while (!this.#stopped) {
      let sleepMs = this.#maxSleepMs;
      this.#askedDuringPass = null;
      try {
        const dues = await nextDueTimes(this.#deps.db, this.#work);
        const now = this.#deps.clock.now();
        const due = this.#work.filter((_, i) => dues[i] && dues[i].getTime() <= now.getTime());
        if (due.length > 0) {
          const counts = await fireAllDue(this.#deps, now, due, { tally: this.#tally, signal: this.#abort.signal });
          if (Object.values(counts).some((n) => n > 0)) continue;
          // Due, yet nothing fired: another process holds those rows (SKIP LOCKED) and is firing
          // them. Looking again at once would spin until it commits.
          sleepMs = Math.min(sleepMs, NOTHING_FIRED_RETRY_MS);
        } else {
          for (const at of dues) if (at) sleepMs = Math.min(sleepMs, Math.max(0, at.getTime() - now.getTime()));
        }
      } catch (error) {
        // After a failed pass (some work failed; the rest fired) the loop waits its longest sleep:
        // work that keeps failing while overdue must not turn it into a busy loop.
        this.#onError(error);
      }
      if (this.#askedDuringPass !== null) sleepMs = Math.min(sleepMs, Math.max(0, this.#askedDuringPass - this.#deps.clock.now().getTime()));
      if (this.#stopped) break;
      await this.#sleepFor(sleepMs);
    }
  }

  /** Sleeps `ms`, or until a wake-up asks for an earlier time. */
  #sleepFor(ms: number): Promise<void> {
    const clock = this.#deps.clock;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleep = null;
        resolve();
      };
      let timer = setTimeout(done, ms);
      this.#sleep = {
        until: clock.now().getTime() + ms,
        wakeAt(atMs: number) {
          const inMs = atMs - clock.now().getTime();
          if (inMs <= 0) return done();
          clearTimeout(timer);
          timer = setTimeout(done, inMs);
          this.until = atMs;
        },
      };
    });
  }
}
