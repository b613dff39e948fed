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
  static keyed(idempotencyKey: string): string {
    return `key:${idempotencyKey}`;
  }
}
