import type { Clock } from "./clock.ts";

/**
 * Lets the same kind of message through at most once per `intervalMs` and counts the ones it
 * held back, so that an outage (every loop and request failing the same way, many times a
 * second) is logged as a few lines that say how many, not as a flood.
 */
export class LogThrottle {
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(private readonly clock: Clock, private readonly intervalMs = 10_000) {}

  /** Whether to log a message of kind `key` now; `suppressed` is how many were held back since the last one. */
  pass(key: string): { pass: true; suppressed: number } | { pass: false } {
    const now = this.clock.now().getTime();
    const last = this.#last.get(key);
    if (last && now - last.at < this.intervalMs) {
      last.suppressed++;
      return { pass: false };
    }
    if (this.#last.size > 1000) this.#last.clear();
    this.#last.set(key, { at: now, suppressed: 0 });
    return { pass: true, suppressed: last?.suppressed ?? 0 };
  }
}
