/** How many session channel subscriptions (SSE) may be open at once; null = no limit. */
export interface SubscriptionLimits {
  /** Per public access token (the same JWT). */
  perPublicToken: number | null;
  /** Per client address, across all its public tokens. */
  perAddress: number | null;
}

/** What the API allows unless configured otherwise (SSE_SUBSCRIPTIONS_PER_TOKEN / _PER_ADDRESS). */
export const DEFAULT_SUBSCRIPTION_LIMITS: SubscriptionLimits = { perPublicToken: 10, perAddress: 100 };

export type Acquired = { ok: true; release(): void } | { ok: false; by: "token" | "address"; max: number };

/**
 * Counts the open subscriptions of public tokens, per token and per client address. A browser
 * holds a few (one per channel it watches); without a bound, one token could hold a thousand
 * connections for ten minutes each. Secret keys are not counted: a backend may fan out to many
 * sessions from one address. The maps hold only keys with open subscriptions.
 */
export class SubscriptionCounter {
  readonly #byToken = new Map<string, number>();
  readonly #byAddress = new Map<string, number>();

  constructor(private readonly limits: SubscriptionLimits) {}

  /** Holds one subscription of `token` from `address`, or says which limit is reached. */
  acquire(token: string, address: string): Acquired {
    const { perPublicToken, perAddress } = this.limits;
    if (perPublicToken !== null && (this.#byToken.get(token) ?? 0) >= perPublicToken) return { ok: false, by: "token", max: perPublicToken };
    if (perAddress !== null && (this.#byAddress.get(address) ?? 0) >= perAddress) return { ok: false, by: "address", max: perAddress };
    increment(this.#byToken, token, 1);
    increment(this.#byAddress, address, 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        increment(this.#byToken, token, -1);
        increment(this.#byAddress, address, -1);
      },
    };
  }

  /** Open subscriptions counted now (for tests). */
  get open(): number {
    let total = 0;
    for (const count of this.#byToken.values()) total += count;
    return total;
  }
}

function increment(map: Map<string, number>, key: string, by: number): void {
  const next = (map.get(key) ?? 0) + by;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}
