import { deleteExpiredWatches, deleteWatches, extendWatches, transactionsEndedBelow, upsertWatch, type Clock, type Queryable } from "@svc/runtime/engine";

/** How long a watch row stands without being extended (a process that died stops costing NOTIFYs after this). */
export const WATCH_TTL_MS = 5 * 60_000;
/** How often a process extends its watches, ends those it no longer needs, and deletes expired ones. */
const MAINTENANCE_MS = 60_000;
/** A watch is kept this long after its environment's last subscriber left (a browser polls again within seconds). */
const LINGER_MS = 2 * 60_000;
/** How often a new watch checks whether the writers that may have missed it have ended. */
const SETTLE_POLL_MS = 50;

interface Watch {
  /** Resolved once the row is committed. */
  ready: Promise<void>;
  holders: number;
  /** When the last holder left (clock ms); null while held. */
  idleSince: number | null;
  expiresAt: number;
  /** Every writer that may have missed the registration has ended. */
  settled: boolean;
}

/**
 * This process's rows of `realtime_watches` (migration 0038): run changes in an environment NOTIFY
 * only while some process watches it. A subscription holds its environment's watch from before
 * its first read until it ends; the row is extended while held and deleted a while after the last
 * holder left. Registering is raced by writers that checked for a watch just before the row
 * committed and commit after the subscriber's read: they do not NOTIFY. Their transaction ids lie
 * below the horizon the registration returns, so once every transaction below it has ended,
 * `onSettled` asks the environment's subscribers to read again. All database work is serialised,
 * so an ending watch's DELETE never overtakes a new registration.
 */
export class RealtimeWatches {
  readonly #db: Queryable;
  readonly #clock: Clock;
  readonly #watcher: string;
  readonly #onSettled: (environmentId: string) => void;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #watches = new Map<string, Watch>();
  #queue: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(options: { db: Queryable; clock: Clock; watcher: string; onSettled: (environmentId: string) => void; onError: (error: unknown, context: string) => void }) {
    this.#db = options.db;
    this.#clock = options.clock;
    this.#watcher = options.watcher;
    this.#onSettled = options.onSettled;
    this.#onError = options.onError;
  }

  /** Environments this process watches now (for tests and metrics). */
  get environments(): string[] {
    return [...this.#watches.keys()];
  }

  /** Whether the environment's watch is registered and every writer that may have missed it has ended (for tests). */
  isSettled(environmentId: string): boolean {
    return this.#watches.get(environmentId)?.settled === true;
  }

  /** Holds the environment's watch; resolves once its row is committed. Call the returned function to let go. */
  async hold(environmentId: string): Promise<() => void> {
    const now = this.#clock.now().getTime();
    let watch = this.#watches.get(environmentId);
    if (!watch) {
      watch = { ready: this.#register(environmentId), holders: 0, idleSince: null, expiresAt: now + WATCH_TTL_MS, settled: false };
      this.#watches.set(environmentId, watch);
    } else if (watch.expiresAt - now < WATCH_TTL_MS / 2) {
      // Maintenance did not extend it (the database was away): register again.
      watch.ready = this.#register(environmentId);
      watch.expiresAt = now + WATCH_TTL_MS;
    }
    watch.holders++;
    watch.idleSince = null;
    const held = watch;
    const ready = watch.ready;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.holders--;
      if (held.holders === 0) held.idleSince = this.#clock.now().getTime();
    };
    try {
      await ready;
    } catch (error) {
      release();
      // A registration that failed is tried again by the next subscriber.
      if (this.#watches.get(environmentId) === held && held.ready === ready) this.#watches.delete(environmentId);
      throw error;
    }
    return release;
  }

  /** Starts the periodic maintenance (extend, end, delete expired). */
  start(): void {
    this.#timer = setInterval(() => void this.maintain(), MAINTENANCE_MS);
    this.#timer.unref();
  }

  /** Stops maintenance and deletes this process's watches. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#watches.clear();
    await this.#serial(() => deleteWatches(this.#db, this.#watcher, null), "realtime watches: delete on stop").catch(() => {});
  }

  /** One maintenance pass (the timer's; tests call it). */
  async maintain(): Promise<void> {
    const now = this.#clock.now().getTime();
    const extend: string[] = [];
    const end: string[] = [];
    for (const [environmentId, watch] of this.#watches) {
      if (watch.holders === 0 && watch.idleSince !== null && now - watch.idleSince >= LINGER_MS) end.push(environmentId);
      else extend.push(environmentId);
    }
    for (const environmentId of end) this.#watches.delete(environmentId);
    const expiresAt = now + WATCH_TTL_MS;
    for (const environmentId of extend) this.#watches.get(environmentId)!.expiresAt = expiresAt;
    await this.#serial(async () => {
      await extendWatches(this.#db, this.#watcher, extend, new Date(expiresAt));
      await deleteWatches(this.#db, this.#watcher, end);
      await deleteExpiredWatches(this.#db, new Date(now));
    }, "realtime watches: maintenance").catch(() => {});
  }

  #register(environmentId: string): Promise<void> {
    const expiresAt = new Date(this.#clock.now().getTime() + WATCH_TTL_MS);
    const registered = this.#serial(() => upsertWatch(this.#db, environmentId, this.#watcher, expiresAt), "realtime watches: register");
    void registered.then((horizon) => this.#settle(environmentId, horizon), () => {});
    return registered.then(() => undefined);
  }

  /** Waits until every transaction below `horizon` ended, then tells the environment's subscribers to read again. */
  async #settle(environmentId: string, horizon: string): Promise<void> {
    let delay = SETTLE_POLL_MS;
    while (!this.#stopped && this.#watches.has(environmentId)) {
      try {
        if (await transactionsEndedBelow(this.#db, horizon)) {
          const watch = this.#watches.get(environmentId);
          if (watch) watch.settled = true;
          this.#onSettled(environmentId);
          return;
        }
      } catch (error) {
        this.#onError(error, "realtime watches: settle");
      }
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      delay = Math.min(delay * 2, 5_000);
    }
  }

  #serial<T>(work: () => Promise<T>, context: string): Promise<T> {
    const next = this.#queue.then(work);
    this.#queue = next.catch((error: unknown) => this.#onError(error, context));
    return next;
  }
}
