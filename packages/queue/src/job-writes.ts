import type { PgBoss } from "pg-boss";
import type { ConsumedJob } from "./consumer.ts";

export interface JobWritesOptions {
  /** How long handled jobs wait for a fetch to carry them before a DELETE of their own (ConsumerOptions.deleteDelayMs). */
  deleteDelayMs: number;
  onError(error: unknown): void;
  /** A DELETE of their own removed `queue`'s handled jobs. */
  onDeleted(queue: string): void;
  /** A DELETE of their own ran (whatever it removed). */
  onFlushed(): void;
}

/**
 * A consumer's writes to the jobs it holds: handled jobs waiting to be deleted, by their queue's
 * next fetch (take) or by a DELETE of their own (flush), and heartbeat touches of the jobs in
 * flight. Deletions and touches run one at a time (serialized): both write many pg-boss rows in
 * scan order, and a touch of every in-flight job racing the deletion of some deadlocks.
 */
export class JobWrites {
  readonly #boss: PgBoss;
  readonly #options: JobWritesOptions;
  readonly #handled = new Map<string, ConsumedJob[]>();
  #writes: Promise<void> = Promise.resolve();
  #flushScheduled = false;
  #flushTimer: NodeJS.Timeout | null = null;

  constructor(boss: PgBoss, options: JobWritesOptions) {
    this.#boss = boss;
    this.#options = options;
  }

  /** A handled job, to be deleted; returns how many of its queue's wait. */
  add(job: ConsumedJob): number {
    let list = this.#handled.get(job.queue);
    if (!list) this.#handled.set(job.queue, (list = []));
    list.push(job);
    return list.length;
  }

  /** Takes `queue`'s handled jobs for a fetch to delete (giveBack if it could not). */
  take(queue: string): ConsumedJob[] | undefined {
    const jobs = this.#handled.get(queue);
    this.#handled.delete(queue);
    return jobs;
  }

  /** Jobs a fetch took and did not delete: they wait again, ahead of the queue's later ones. */
  giveBack(queue: string, jobs: ConsumedJob[], now: boolean): void {
    this.#handled.set(queue, [...jobs, ...(this.#handled.get(queue) ?? [])]);
    this.schedule(now);
  }

  /** Deletes the handled jobs: in this event-loop turn's setImmediate when `now`, else after deleteDelayMs. */
  schedule(now: boolean): void {
    if (this.#flushScheduled) return;
    if (!now) {
      if (this.#flushTimer) return;
      this.#flushTimer = setTimeout(() => {
        this.#flushTimer = null;
        this.schedule(true);
      }, this.#options.deleteDelayMs);
      this.#flushTimer.unref();
      return;
    }
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      void this.flush().then(() => this.#options.onFlushed());
    });
  }

  /** Runs `fn` once the writes before it are done, and holds the writes after it until it is. */
  serialized<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(fn, fn);
    this.#writes = next.then(
      () => {},
      () => {},
    );
    return next;
  }

  /** Deletes every handled job now, a DELETE per queue. */
  flush(): Promise<void> {
    return this.serialized(async () => {
      const batches = [...this.#handled];
      this.#handled.clear();
      for (const [queue, jobs] of batches) {
        try {
          // A handled job is deleted, not marked completed: the run's own rows are its history, and
          // a completion is an index-maintaining UPDATE of a row that pg-boss would delete later
          // anyway (3 WAL records and ~480 bytes of WAL per job, against 1 and ~60). Passing
          // {id, retryCount} settles only the attempt we hold: a job that was redelivered to another
          // worker meanwhile is left alone.
          await this.#boss.deleteJob(queue, jobs.map((j) => ({ id: j.id, retryCount: j.retryCount })));
          this.#options.onDeleted(queue);
        } catch (error) {
          this.#options.onError(error);
        }
      }
    });
  }

  /** Heartbeats of the jobs in flight when its turn comes, a touch per queue. */
  touch(inFlight: () => Iterable<ConsumedJob>): Promise<void> {
    return this.serialized(async () => {
      const byQueue = new Map<string, { id: string; retryCount: number }[]>();
      for (const job of inFlight()) {
        let list = byQueue.get(job.queue);
        if (!list) byQueue.set(job.queue, (list = []));
        list.push({ id: job.id, retryCount: job.retryCount });
      }
      for (const [queue, ids] of byQueue) await this.#boss.touch(queue, ids).catch((error) => this.#options.onError(error));
    });
  }

  /** Forgets the handled jobs (abandon: pg-boss's heartbeat expiry takes care of them). */
  clear(): void {
    this.#handled.clear();
  }

  stop(): void {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
  }
}
