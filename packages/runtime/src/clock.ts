/** Time is injected so tests drive it; nothing in the engine calls Date.now() directly. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test moves by hand. */
export class FakeClock implements Clock {
  #ms: number;
  constructor(start: Date | number = Date.now()) {
    this.#ms = typeof start === "number" ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  set(time: Date | number): void {
    this.#ms = typeof time === "number" ? time : time.getTime();
  }
  advance(ms: number): Date {
    this.#ms += ms;
    return this.now();
  }
}
