import type { SharedListener } from "@svc/runtime/db";
import { CHANNELS, type RunShape } from "@svc/runtime/engine";
import type { RealtimeWatches } from "./realtime-watches.ts";

export type WaitOutcome = "changed" | "timeout" | "aborted";

/** One live request's registration: woken when a run its shape may hold changed. */
export interface RunChangeSubscription {
  /** Resolves at the first change since the last `wait` returned (at once if one came meanwhile), at `ms`, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<WaitOutcome>;
  close(): void;
}

interface Subscriber {
  environmentId: string;
  shape: RunShape;
  dirty: boolean;
  wake: (() => void) | null;
}

type Notice = [environmentId: string, runId: string, batchId: string | null, tags: string[] | null];

/**
 * Wakes this process's live realtime requests when a run they may show changed. The process's one
 * LISTEN connection (`notices`) receives `svc_run_changes` from the triggers on `runs` (migration
 * 0038) for the environments `watches` registered; each notice names the run, its batch and its
 * tags, so it wakes only the subscribers of that run, that batch, or tags the run carries. A
 * notice is only a wake-up: the woken request reads what changed since its snapshot from the
 * table, so a notice lost with the connection costs latency, never an update (on reconnect every
 * subscriber reads again).
 */
export class RunChangeHub {
  readonly #byRun = new Map<string, Set<Subscriber>>();
  readonly #byBatch = new Map<string, Set<Subscriber>>();
  readonly #byTagEnvironment = new Map<string, Set<Subscriber>>();
  readonly #onError: (error: unknown, context: string) => void;
  readonly watches: RealtimeWatches;

  constructor(options: { notices: SharedListener; watches: RealtimeWatches; onError: (error: unknown, context: string) => void }) {
    this.watches = options.watches;
    this.#onError = options.onError;
    options.notices.route(CHANNELS.runChanges, {
      onNotification: (payload) => this.#onNotice(payload),
      onReconnect: () => this.#wakeAll(() => true),
    });
  }

  /** How many live requests wait here. */
  get size(): number {
    let n = 0;
    for (const map of [this.#byRun, this.#byBatch, this.#byTagEnvironment]) for (const set of map.values()) n += set.size;
    return n;
  }

  /** Wakes every subscriber of an environment (its watch just settled: writers that raced it have ended). */
  wakeEnvironment(environmentId: string): void {
    this.#wakeAll((sub) => sub.environmentId === environmentId);
  }

  /** Ends every wait (a stopping process answers its live requests). */
  stop(): void {
    this.#wakeAll(() => true);
  }

  /** Registers a live request; register before reading, so a change committed meanwhile is either read or announced. */
  subscribe(environmentId: string, shape: RunShape): RunChangeSubscription {
    const sub: Subscriber = { environmentId, shape, dirty: false, wake: null };
    const [map, key] = this.#slot(sub);
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(sub);
    return {
      wait: (ms, signal) => this.#wait(sub, ms, signal),
      close: () => {
        const current = map.get(key);
        current?.delete(sub);
        if (current?.size === 0) map.delete(key);
        sub.wake?.();
      },
    };
  }

  #slot(sub: Subscriber): [Map<string, Set<Subscriber>>, string] {
    switch (sub.shape.kind) {
      case "run":
        return [this.#byRun, `${sub.environmentId}\n${sub.shape.runId}`];
      case "batch":
        return [this.#byBatch, `${sub.environmentId}\n${sub.shape.batchId}`];
      case "tags":
        return [this.#byTagEnvironment, sub.environmentId];
    }
  }

  #wait(sub: Subscriber, ms: number, signal: AbortSignal): Promise<WaitOutcome> {
    if (sub.dirty) {
      sub.dirty = false;
      return Promise.resolve("changed");
    }
    if (signal.aborted) return Promise.resolve("aborted");
    return new Promise<WaitOutcome>((resolve) => {
      const done = (outcome: WaitOutcome) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        sub.wake = null;
        if (outcome === "changed") sub.dirty = false;
        resolve(outcome);
      };
      const onAbort = () => done("aborted");
      const timer = setTimeout(() => done("timeout"), ms);
      signal.addEventListener("abort", onAbort, { once: true });
      sub.wake = () => done("changed");
    });
  }

  #mark(sub: Subscriber): void {
    sub.dirty = true;
    sub.wake?.();
  }

  #wakeAll(which: (sub: Subscriber) => boolean): void {
    for (const map of [this.#byRun, this.#byBatch, this.#byTagEnvironment]) {
      for (const set of map.values()) for (const sub of set) if (which(sub)) this.#mark(sub);
    }
  }

  #onNotice(payload: string): void {
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch (error) {
      this.#onError(error, "run change notice");
      return;
    }
    const [environmentId, runId, batchId, tags] = notice;
    for (const sub of this.#byRun.get(`${environmentId}\n${runId}`) ?? []) this.#mark(sub);
    if (batchId) for (const sub of this.#byBatch.get(`${environmentId}\n${batchId}`) ?? []) this.#mark(sub);
    for (const sub of this.#byTagEnvironment.get(environmentId) ?? []) {
      // Tags left out of an oversized notice: any tag subscriber of the environment may care.
      if (sub.shape.kind === "tags" && (tags === null || sub.shape.tags.every((tag) => tags.includes(tag)))) this.#mark(sub);
    }
  }
}
