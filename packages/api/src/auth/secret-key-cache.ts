import { NotificationListener } from "@svc/runtime/db";
import { CHANNELS, sha256Hex, type Environment } from "@svc/runtime/engine";

interface Entry {
  environment: Environment;
  /** Epoch ms after which the entry is not used: the cache's TTL or the key's own expiry. */
  until: number;
}

type Lookup = () => Promise<{ environment: Environment; expiresAt: Date | null } | null>;

/** What verifies an environment's public tokens: the environment and the keys that sign them. */
export interface SigningKeys {
  environment: Environment;
  keys: string[];
  /** When the first key expires (the end of a rotation's grace period); null: none does. */
  firstExpiry: Date | null;
}

/**
 * Which environment a secret key opens, remembered for up to `ttlMs` so an authenticated request
 * needs no extra round trip. It is only used while its LISTEN connection is up: any change to a
 * secret key or an environment NOTIFYs `svc_credentials` (a database trigger), and every replica
 * drops its cache within milliseconds. A key's own expiry (the end of a rotation's grace period)
 * is honoured without any notice. Unknown keys are never cached.
 */
export class SecretKeyCache {
  readonly #entries = new Map<string, Entry>();
  readonly #signing = new Map<string, { value: SigningKeys; until: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  #generation = 0;
  #listener: NotificationListener | null = null;
  #cleared: (() => void)[] = [];

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  /** Starts listening for credential changes; until then (and whenever the connection is down) nothing is cached. */
  /** `onError`: told of connection errors of the LISTEN connection (it reconnects by itself). */
  async start(databaseUrl: string, onError: (error: unknown) => void): Promise<void> {
    this.#listener = new NotificationListener({
      url: databaseUrl,
      channels: [CHANNELS.credentials],
      onNotification: () => this.clear(),
      onDisconnect: () => this.clear(),
      onReconnect: () => this.clear(),
      onError,
    });
    await this.#listener.start();
  }

  async stop(): Promise<void> {
    await this.#listener?.stop();
    this.#listener = null;
    this.clear();
  }

  /** Resolves the next time the cache is dropped (a change notice arrived). */
  nextClear(): Promise<void> {
    return new Promise((resolve) => this.#cleared.push(resolve));
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#signing.clear();
    const waiting = this.#cleared;
    this.#cleared = [];
    for (const resolve of waiting) resolve();
  }

  /** The key's environment, from the cache when it is live and fresh, else from `lookup`. */
  async environmentFor(key: string, now: Date, lookup: Lookup): Promise<Environment | null> {
    const live = this.#listener?.connected === true;
    const hash = sha256Hex(key);
    const entry = live ? this.#entries.get(hash) : undefined;
    if (entry && entry.until > now.getTime()) return entry.environment;
    const generation = this.#generation;
    const found = await lookup();
    // A change notice that arrived during the lookup may concern this very key: do not keep it.
    if (found && live && generation === this.#generation) {
      if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
      const until = Math.min(now.getTime() + this.#ttlMs, found.expiresAt?.getTime() ?? Infinity);
      this.#entries.set(hash, { environment: found.environment, until });
    }
    return found?.environment ?? null;
  }

  /**
   * The keys that verify an environment's public tokens (by the token's `sub`), from the cache when
   * it is live and fresh, else from `lookup`; kept no longer than the first key's expiry. The same
   * change notices that drop cached secret keys drop these.
   */
  async signingKeysFor(environmentId: string, now: Date, lookup: () => Promise<SigningKeys | null>): Promise<SigningKeys | null> {
    const live = this.#listener?.connected === true;
    const entry = live ? this.#signing.get(environmentId) : undefined;
    if (entry && entry.until > now.getTime()) return entry.value;
    const generation = this.#generation;
    const found = await lookup();
    if (found && live && generation === this.#generation) {
      if (this.#signing.size >= this.#maxEntries) this.#signing.clear();
      this.#signing.set(environmentId, { value: found, until: Math.min(now.getTime() + this.#ttlMs, found.firstExpiry?.getTime() ?? Infinity) });
    }
    return found;
  }
}
