import { NotificationListener } from "./notification-listener.ts";

/** What one part of a process does with the notices of its channel, and with gaps in them. */
export interface ChannelRoute {
  onNotification(payload: string): void;
  /** Notices may be missed from now on (the connection dropped). */
  onDisconnect?(): void;
  /** Listening again: notices sent meanwhile are gone, look again. */
  onReconnect?(): void;
}

/**
 * One LISTEN connection for every part of a process that wants notices (an API process: credential
 * changes for its key cache, session records for its SSE subscribers). Each connection that
 * LISTENs in a database is woken at every commit that NOTIFYs there, on whatever channel: one per
 * process instead of one per part spares Postgres a backend wake-up per such commit, and the
 * process a connection. Routes are added before start().
 */
export class SharedListener {
  readonly #routes = new Map<string, ChannelRoute[]>();
  readonly #url: string;
  readonly #onError: (error: unknown) => void;
  readonly #applicationName: string;
  #listener: NotificationListener | null = null;

  /** `applicationName`: the connection's name in pg_stat_activity (default `svc-api-listen`). */
  constructor(options: { url: string; onError: (error: unknown) => void; applicationName?: string }) {
    this.#url = options.url;
    this.#onError = options.onError;
    this.#applicationName = options.applicationName ?? "svc-api-listen";
  }

  /** Sends `channel`'s notices to `route`. */
  route(channel: string, route: ChannelRoute): void {
    if (this.#listener) throw new Error(`SharedListener: route ${channel} added after start()`);
    const routes = this.#routes.get(channel);
    if (routes) routes.push(route);
    else this.#routes.set(channel, [route]);
  }

  /** Whether the connection is up and listening (notices are being received). */
  get connected(): boolean {
    return this.#listener?.connected === true;
  }

  async start(): Promise<void> {
    const all = [...this.#routes.values()].flat();
    const listener = new NotificationListener({
      url: this.#url,
      channels: [...this.#routes.keys()],
      onNotification: (channel, payload) => {
        for (const route of this.#routes.get(channel) ?? []) route.onNotification(payload);
      },
      onDisconnect: () => all.forEach((route) => route.onDisconnect?.()),
      onReconnect: () => all.forEach((route) => route.onReconnect?.()),
      onError: this.#onError,
      applicationName: this.#applicationName,
    });
    this.#listener = listener;
    try {
      await listener.start();
    } catch (error) {
      // Not listening: start() may be tried again (untilReachable).
      this.#listener = null;
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.#listener?.stop();
    this.#listener = null;
  }
}
