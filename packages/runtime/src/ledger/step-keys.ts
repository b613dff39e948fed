/**
 * Deterministic step keys. Unkeyed durable calls are numbered by call order within one execution
 * (`#0`, `#1`, …), so a replay that makes the same calls in the same order meets the same keys;
 * a call with a user idempotency key is addressed by that key instead.
 */
export class StepKeys {
  #next = 0;
  nextOrdinal(): string {
    return `#${this.#next++}`;
  }
  /** The key the next unkeyed call will get, without taking it. */
  peekOrdinal(): string {
    return `#${this.#next}`;
  }
  static keyed(idempotencyKey: string): string {
    return `key:${idempotencyKey}`;
  }
  /** A lifecycle hook's record (onStart, a wait's onResume): named, so it takes no number from the code's calls. */
  static hook(name: string): string {
    return `hook:${name}`;
  }
}
