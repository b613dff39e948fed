import type { Clock } from "@svc/runtime/engine";

export interface RateLimit {
  /** Requests per second each client address may make on average. */
  perSecond: number;
  /** Requests an idle address may make at once. */
  burst: number;
  /** Addresses remembered; past that the least recently seen is forgotten (memory stays bounded). */
  maxAddresses: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per client address. The Map keeps insertion order and each take() re-inserts its
 * address, so the first key is always the least recently seen one and eviction is O(1). Forgetting
 * an address gives it a full bucket again: with `maxAddresses` well above the number of clients
 * seen within `burst / perSecond` seconds, only an attacker cycling through that many addresses
 * gains anything, and each of those addresses is still held to the limit.
 */
export class AddressRateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    private readonly limit: RateLimit,
    private readonly clock: Clock,
  ) {}

  /** Takes one request for `address`: 0 when it may pass, else the whole seconds to wait. */
  take(address: string): number {
    const bucket = this.#refill(address);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return this.#secondsUntilOne(bucket);
  }

  /** What take() would answer, without taking anything (a limit on failures checks before, takes after). */
  wait(address: string): number {
    const bucket = this.#refill(address);
    return bucket.tokens >= 1 ? 0 : this.#secondsUntilOne(bucket);
  }

  /** The address's bucket, topped up to now and made the most recently seen (the oldest forgotten past maxAddresses). */
  #refill(address: string): Bucket {
    const now = this.clock.now().getTime();
    const { perSecond, burst, maxAddresses } = this.limit;
    const seen = this.#buckets.get(address);
    const bucket = seen ?? { tokens: burst, at: now };
    if (seen) this.#buckets.delete(address);
    bucket.tokens = Math.min(burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    this.#buckets.set(address, bucket);
    if (this.#buckets.size > maxAddresses) this.#buckets.delete(this.#buckets.keys().next().value!);
    return bucket;
  }

  #secondsUntilOne(bucket: Bucket): number {
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.limit.perSecond));
  }

  /** Addresses remembered now (for tests of the bound). */
  get size(): number {
    return this.#buckets.size;
  }
}
