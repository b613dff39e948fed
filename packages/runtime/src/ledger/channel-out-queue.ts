/** One `.out` record a run appends, with the part id that makes its append happen once. */
export interface OutRecord {
  data: string | null;
  headers?: [string, string][];
  /** The record's place among the run's appends to this session (its part id is `<run>:<epoch>:<index>`). */
  index: number;
}

interface Pending {
  records: OutRecord[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The `.out` appends of one run to one session, in order: sent right away when no send is under
 * way, else together with everything that queued meanwhile, in one append (one round trip however
 * fast the run writes, and no timer adding latency).
 */
export class ChannelOutQueue {
  #pending: Pending[] = [];
  #sending: Promise<void> | null = null;

  constructor(private readonly send: (records: OutRecord[]) => Promise<void>) {}

  /** Resolves once these records are stored. */
  push(records: OutRecord[]): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.#pending.push({ records, resolve, reject }));
    this.#pump();
    return done;
  }

  /** Resolves once everything pushed so far has been sent (or failed). */
  async drain(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  #pump(): void {
    if (this.#sending) return;
    this.#sending = (async () => {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          await this.send(batch.flatMap((p) => p.records));
          for (const p of batch) p.resolve();
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
      this.#sending = null;
    })();
  }
}
