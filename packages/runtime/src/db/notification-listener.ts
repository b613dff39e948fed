import pg from "pg";

export interface ListenerBackend {
  pid: number;
  /** Its backend_start, exactly as Postgres prints it (a pid alone could be a later process's). */
  startedAt: string | null;
}

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
  #backend: ListenerBackend | null = null;
  #stopped = false;
  #attempt = 0;

  constructor(options: {
    url: string;
    channels: string[];
    onNotification: NotificationHandler;
    onReconnect?: () => void;
    onDisconnect?: () => void;
    onError?: (error: unknown) => void;
  }) {
    this.#url = options.url;
    this.#channels = options.channels;
    this.#onNotification = options.onNotification;
    this.#onReconnect = options.onReconnect ?? (() => {});
    this.#onDisconnect = options.onDisconnect ?? (() => {});
    this.#onError = options.onError ?? (() => {});
  }

  /** Whether the connection is up and listening (notifications are being received). */
  get connected(): boolean {
    return this.#client !== null;
  }

  /**
   * The server process behind the connection (null while disconnected): others can tell from
   * pg_stat_activity whether this listener is still there.
   */
  get backend(): ListenerBackend | null {
    return this.#client ? this.#backend : null;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#connect();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url, application_name: "svc-worker-listen" });
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
      // As text: a Date would cut backend_start's microseconds, and it would no longer match.
      const { rows } = await client.query<{ pid: number; started_at: string | null }>(
        `SELECT pg_backend_pid() AS pid, (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS started_at`,
      );
      this.#backend = { pid: rows[0]!.pid, startedAt: rows[0]!.started_at };
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
      const delay = Math.min(5000, 100 * 2 ** this.#attempt++);
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
