/** Time is injected so tests drive it; nothing in the engine calls Date.now() directly. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Deadlines that fire a callback once time has passed (a run's maxDuration). Injected beside the
 * Clock: tests give a FakeClock, whose `advance` fires what became due, instead of sleeping.
 */
export interface Timers {
  /** Calls `fire` once `ms` have passed. Returns the function that cancels it. */
  after(ms: number, fire: () => void): () => void;
}

/** setTimeout's longest delay: Node fires a longer one after 1 ms. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** Real timers; a delay longer than setTimeout takes (a maxDuration of weeks) is chained in ~24.8-day steps. */
export const systemTimers: Timers = {
  after(ms, fire) {
    let timer: NodeJS.Timeout;
    const arm = (left: number) => {
      timer = setTimeout(() => (left > MAX_TIMEOUT_MS ? arm(left - MAX_TIMEOUT_MS) : fire()), Math.min(Math.max(0, left), MAX_TIMEOUT_MS));
    };
    arm(ms);
    return () => clearTimeout(timer);
  },
};

/** A clock a test moves by hand; its timers fire when it is moved past their time. */
export class FakeClock implements Clock, Timers {
  #ms: number;
  #timers = new Set<{ at: number; fire: () => void }>();
  constructor(start: Date | number = Date.now()) {
    this.#ms = typeof start === "number" ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  set(time: Date | number): void {
    this.#ms = typeof time === "number" ? time : time.getTime();
    this.#fireDue();
  }
  advance(ms: number): Date {
    this.#ms += ms;
    this.#fireDue();
    return this.now();
  }
  after(ms: number, fire: () => void): () => void {
    const timer = { at: this.#ms + ms, fire };
    this.#timers.add(timer);
    return () => this.#timers.delete(timer);
  }
  /** Timers not fired or canceled yet. */
  get pendingTimers(): number {
    return this.#timers.size;
  }
  #fireDue(): void {
    for (const timer of [...this.#timers].sort((a, b) => a.at - b.at)) {
      if (timer.at > this.#ms) break;
      this.#timers.delete(timer);
      timer.fire();
    }
  }
}
