import type { Clock } from "@svc/runtime/engine";
import { AddressRateLimiter, type RateLimit } from "../http/rate-limit.ts";

/** How many failed sign-ins the dashboard allows, per client address and per token prefix. */
export interface LoginRateLimit {
  /** null: no limit per address. */
  perAddress: RateLimit | null;
  /** null: no limit per token prefix. */
  perTokenPrefix: RateLimit | null;
}

/**
 * Characters of a submitted token that name its bucket: `svc_pat_` and the first 8 random ones.
 * Guesses spread over many addresses at one token still share a bucket, and the prefix alone
 * says nothing usable about the token (only its SHA-256 is stored).
 */
export const TOKEN_PREFIX_LENGTH = 16;

/**
 * Throttles failed sign-ins on the dashboard's form (wrong, revoked or malformed tokens): a
 * client address and a token prefix each have a token bucket, checked before the token is
 * looked up and drawn from only when the attempt fails, so signing in successfully never counts.
 * Time comes from the injected clock.
 */
export class LoginThrottle {
  readonly #addresses: AddressRateLimiter | null;
  readonly #prefixes: AddressRateLimiter | null;

  constructor(limit: LoginRateLimit, clock: Clock) {
    this.#addresses = limit.perAddress ? new AddressRateLimiter(limit.perAddress, clock) : null;
    this.#prefixes = limit.perTokenPrefix ? new AddressRateLimiter(limit.perTokenPrefix, clock) : null;
  }

  /** Seconds to wait before `address` may try `token` (0: go ahead), and which limit holds it back. */
  wait(address: string, token: string): { seconds: number; by: "address" | "token" | null } {
    const byAddress = this.#addresses?.wait(address) ?? 0;
    if (byAddress > 0) return { seconds: byAddress, by: "address" };
    const byToken = this.#prefixes?.wait(prefixOf(token)) ?? 0;
    return byToken > 0 ? { seconds: byToken, by: "token" } : { seconds: 0, by: null };
  }

  /** Counts a failed attempt against both buckets. */
  failed(address: string, token: string): void {
    this.#addresses?.take(address);
    this.#prefixes?.take(prefixOf(token));
  }
}

function prefixOf(token: string): string {
  return token.slice(0, TOKEN_PREFIX_LENGTH);
}
