import type { SharedListener } from "@svc/runtime/db";
import { CHANNELS, sha256Hex, type Environment } from "@svc/runtime/engine";

type Lookup = () => Promise<{ environment: Environment; expiresAt: Date | null } | null>;

/** A cached value and the epoch ms after which it is not used: the cache's TTL or the value's own expiry. */
interface Entry<V> {
  value: V;
  until: number;
}

/** What verifies an environment's public tokens: the environment and the keys that sign them. */
export interface SigningKeys {
  environment: Environment;
  keys: string[];
  /** When the first key expires (the end of a rotation's grace period); null: none does. */
  firstExpiry: Date | null;
}

/** A public token verified, and until when that verification stands (its own `exp`, its signing keys' first expiry). */
export interface VerifiedToken<P> {
  principal: P;
  validUntil: Date | null;
}

/**
 * Which environment a secret key opens, remembered for up to `ttlMs` so an authenticated request
 * needs no extra round trip. It is only used while the process's LISTEN connection (`notices`) is
 * up: any change to a secret key or an environment NOTIFYs `svc_credentials` (a database trigger),
 * and every replica drops its cache within milliseconds. Without `notices` nothing is cached. A key's own expiry (the end of a rotation's grace period)
 * is honoured without any notice. Unknown keys are never cached.
 *
 * Public tokens verified with those keys are remembered the same way (a chat's client sends the
 * same token with every message: its signature is checked once, not on every request), dropped
 * with the keys, and never past the token's expiry or the first expiry of the keys that verified
 * it. Tokens that fail verification are never cached.
 */
export class SecretKeyCache {
  readonly #entries = new Map<string, Entry<{ environment: Environment; expiresAt: Date | null }>>();
  readonly #signing = new Map<string, Entry<SigningKeys>>();
  readonly #publicTokens = new Map<string, Entry<unknown>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  #generation = 0;
  readonly #notices: SharedListener | null;
  #cleared: (() => void)[] = [];

  /** Caches only while `notices` is listening (until it starts, and whenever its connection is down, nothing is). */
  constructor(options: { ttlMs?: number; maxEntries?: number; notices?: SharedListener } = {}) {
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#notices = options.notices ?? null;
    this.#notices?.route(CHANNELS.credentials, {
      onNotification: () => this.clear(),
      onDisconnect: () => this.clear(),
      onReconnect: () => this.clear(),
    });
  }

  /** Resolves the next time the cache is dropped (a change notice arrived). */
  nextClear(): Promise<void> {
    return new Promise((resolve) => this.#cleared.push(resolve));
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#signing.clear();
    this.#publicTokens.clear();
    const waiting = this.#cleared;
    this.#cleared = [];
    for (const resolve of waiting) resolve();
  }

  /** The key's environment, from the cache when it is live and fresh, else from `lookup`. */
  async environmentFor(key: string, now: Date, lookup: Lookup): Promise<Environment | null> {
    const found = await this.#cached(this.#entries, sha256Hex(key), now, lookup, (f) => f.expiresAt);
    return found?.environment ?? null;
  }

  /**
   * The keys that verify an environment's public tokens (by the token's `sub`), from the cache when
   * it is live and fresh, else from `lookup`; kept no longer than the first key's expiry. The same
   * change notices that drop cached secret keys drop these.
   */
  signingKeysFor(environmentId: string, now: Date, lookup: () => Promise<SigningKeys | null>): Promise<SigningKeys | null> {
    return this.#cached(this.#signing, environmentId, now, lookup, (f) => f.firstExpiry);
  }

  /**
   * A public token's principal, from the cache when it is live and the token was verified before
   * (and that still stands at `now`), else from `verify` (which throws when the token does not verify).
   */
  async verifiedPublicToken<P>(token: string, now: Date, verify: () => Promise<VerifiedToken<P>>): Promise<P> {
    const verified = (await this.#cached(this.#publicTokens as Map<string, Entry<VerifiedToken<P>>>, sha256Hex(token), now, verify, (v) => v.validUntil))!;
    return verified.principal;
  }

  /** One cached lookup: used while live and fresh, kept until the TTL or `expiryOf`, whichever is first. */
  async #cached<V>(map: Map<string, Entry<V>>, key: string, now: Date, lookup: () => Promise<V | null>, expiryOf: (value: V) => Date | null): Promise<V | null> {
    const live = this.#notices?.connected === true;
    const entry = live ? map.get(key) : undefined;
    if (entry && entry.until > now.getTime()) return entry.value;
    const generation = this.#generation;
    const found = await lookup();
    // A change notice that arrived during the lookup may concern this very entry: do not keep it.
    if (found && live && generation === this.#generation) {
      if (map.size >= this.#maxEntries) map.clear();
      map.set(key, { value: found, until: Math.min(now.getTime() + this.#ttlMs, expiryOf(found)?.getTime() ?? Infinity) });
    }
    return found;
  }
}
