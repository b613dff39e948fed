import { NotificationListener } from "../../db/notification-listener.ts";
import { CHANNELS } from "../channels.ts";

/** Tells a run waiting in session.in.once that an `.in` record may have arrived. */
export interface ChannelArrivals {
  /**
   * Starts watching a session's `.in` for a record after `afterSeq`: call it before looking at
   * the channel, so that a record appended meanwhile is not missed. The watch wakes on such a
   * record, or when a notice may have been missed (the caller looks again either way).
   */
  watch(sessionId: string, afterSeq: number): Promise<ArrivalWatch>;
}

export interface ArrivalWatch {
  /** Resolves when woken, or after `ms`. */
  wait(ms: number): Promise<void>;
  cancel(): void;
}

interface Waiter {
  afterSeq: number;
  wake: () => void;
}

/**
 * ChannelArrivals for one worker process: one LISTEN connection on CHANNELS.sessionIn, opened the
 * first time a run waits in `once` and kept until stop(). Notices it could have missed (the
 * connection replaced) wake every waiter, which then reads the channel itself.
 */
export class SessionInArrivals implements ChannelArrivals {
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #url: string;
  readonly #channel: string;
  readonly #onError: (error: unknown) => void;
  #listener: NotificationListener | null = null;
  #started: Promise<void> | null = null;

  /** `channel`: CHANNELS.sessionIn (the default), or CHANNELS.runStreamIn for runs' input streams (`<run>/<key> <seq>`). */
  constructor(options: { databaseUrl: string; onError: (error: unknown) => void; channel?: string }) {
    this.#url = options.databaseUrl;
    this.#channel = options.channel ?? CHANNELS.sessionIn;
    this.#onError = options.onError;
  }

  async watch(sessionId: string, afterSeq: number): Promise<ArrivalWatch> {
    await this.#start();
    let woken = false;
    let wakeWaiting: (() => void) | null = null;
    const waiter: Waiter = {
      afterSeq,
      wake: () => {
        woken = true;
        remove();
        wakeWaiting?.();
      },
    };
    let set = this.#waiters.get(sessionId);
    if (!set) this.#waiters.set(sessionId, (set = new Set()));
    set.add(waiter);
    const remove = () => {
      set!.delete(waiter);
      if (set!.size === 0 && this.#waiters.get(sessionId) === set) this.#waiters.delete(sessionId);
    };
    return {
      wait: (ms) =>
        woken
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              const timer = setTimeout(() => {
                remove();
                resolve();
              }, ms);
              wakeWaiting = () => {
                clearTimeout(timer);
                resolve();
              };
            }),
      cancel: remove,
    };
  }

  async stop(): Promise<void> {
    await this.#listener?.stop();
    this.#listener = null;
    this.#started = null;
    this.#wakeAll();
  }

  #start(): Promise<void> {
    if (!this.#started) {
      this.#listener = new NotificationListener({
        url: this.#url,
        channels: [this.#channel],
        onNotification: (_channel, payload) => this.#onNotice(payload),
        onReconnect: () => this.#wakeAll(),
        onError: this.#onError,
      });
      this.#started = this.#listener.start();
    }
    return this.#started;
  }

  #onNotice(payload: string): void {
    const [sessionId, seqText] = payload.split(" ");
    const seq = Number(seqText);
    for (const waiter of this.#waiters.get(sessionId ?? "") ?? []) if (!(seq <= waiter.afterSeq)) waiter.wake();
  }

  #wakeAll(): void {
    for (const set of this.#waiters.values()) for (const waiter of set) waiter.wake();
  }
}
