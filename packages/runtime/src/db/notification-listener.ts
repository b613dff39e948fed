import { randomBytes } from "node:crypto";
import pg from "pg";

export type NotificationHandler = (channel: string, payload: string) => void;

/**
 * One dedicated connection that LISTENs on some channels and reconnects with backoff if it
 * drops. `onReconnect` lets callers re-check what they may have missed while disconnected;
 * `onDisconnect` tells them that notifications may be missed from now on.
 */
export class NotificationListener {
  readonly #url: string;
  readonly #channels: string[];
  readonly #onNotification: NotificationHandler;
  readonly #onReconnect: () => void;
  readonly #onDisconnect: () => void;
  readonly #onError: (error: unknown) => void;
  #client: pg.Client | null = null;
  readonly #holdSessionLock: boolean;
  readonly #applicationName: string;
  #sessionLock: string | null = null;
  #stopped = false;
  #attempt = 0;

  constructor(options: {
    url: string;
    channels: string[];
    onNotification: NotificationHandler;
    onReconnect?: () => void;
    onDisconnect?: () => void;
    /** Told of each connection error (the listener reconnects by itself); required, so none goes unreported. */
    onError: (error: unknown) => void;
    /** Hold a session advisory lock on each connection (see `sessionLock`). */
    holdSessionLock?: boolean;
    /** The connection's application_name in pg_stat_activity (default `svc-worker-listen`). */
    applicationName?: string;
  }) {
    this.#url = options.url;
    this.#channels = options.channels;
    this.#onNotification = options.onNotification;
    this.#onReconnect = options.onReconnect ?? (() => {});
    this.#onDisconnect = options.onDisconnect ?? (() => {});
    this.#onError = options.onError;
    this.#holdSessionLock = options.holdSessionLock ?? false;
    this.#applicationName = options.applicationName ?? "svc-worker-listen";
  }

  /** Whether the connection is up and listening (notifications are being received). */
  get connected(): boolean {
    return this.#client !== null;
  }

  /**
   * With `holdSessionLock`, the key of a Postgres advisory lock (bigint, as text) that the
   * connection in use holds for as long as it lives; a new key for every connection. Others tell
   * whether this listener is still connected by trying to take the lock (a dead process's
   * connection, and its lock, go at once). Null while disconnected.
   */
  get sessionLock(): string | null {
    return this.#client ? this.#sessionLock : null;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#connect();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url, application_name: this.#applicationName });
    client.on("notification", (message) => this.#onNotification(message.channel, message.payload ?? ""));
    // Only the connection in use reconnects: a late event from one given up on must not tear down
    // its healthy replacement.
    client.on("error", (error) => {
      this.#onError(error);
      if (this.#client === client) void this.#reconnect();
    });
    client.on("end", () => {
      if (this.#client === client) void this.#reconnect();
    });
    try {
      await client.connect();
      for (const channel of this.#channels) await client.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
      if (this.#holdSessionLock) {
        // Random, so that the lock of a connection being replaced never holds up its successor.
        const key = randomBytes(8).readBigInt64BE().toString();
        await client.query(`SELECT pg_advisory_lock($1::bigint)`, [key]);
        this.#sessionLock = key;
      }
    } catch (error) {
      // A connection that came up but could not LISTEN would otherwise stay open, unused.
      discard(client);
      throw error;
    }
    this.#client = client;
    this.#attempt = 0;
  }

  async #reconnect(): Promise<void> {
    if (this.#stopped || !this.#client) return;
    const old = this.#client;
    this.#client = null;
    this.#onDisconnect();
    discard(old);
    while (!this.#stopped) {
      // At most one try a second while the database is away, so it is heard again within a second of its return.
      const delay = Math.min(1000, 100 * 2 ** this.#attempt++);
      await new Promise((r) => setTimeout(r, delay));
      try {
        await this.#connect();
        this.#onReconnect();
        return;
      } catch (error) {
        this.#onError(error);
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const client = this.#client;
    this.#client = null;
    if (client) {
      client.removeAllListeners();
      client.on("error", () => {});
      await client.end().catch(() => {});
    }
  }
}

/** Closes a connection no longer in use; an error it still emits is expected, not a crash. */
function discard(client: pg.Client): void {
  client.removeAllListeners();
  client.on("error", () => {});
  client.end().catch(() => {});
}
