import type { Job, PgBoss } from "pg-boss";
import { consumerFetch, type FetchTail } from "./fetch-statement.ts";
import { JobWrites } from "./job-writes.ts";

export interface ConsumedJob {
  id: string;
  queue: string;
  retryCount: number;
  data: { runId: string; kind: "start" | "resume" };
  /** What the fetch's tail (ConsumerOptions.fetchAlso) returned with this job; undefined when it had none. */
  fetchedWith?: unknown;
}

/** How long freed slots wait for company before a refill fetch (when few are free). */
const REFILL_DELAY_MS = 10;

/** ConsumerOptions.deleteDelayMs's default. */
const DELETE_DELAY_MS = 100;

/** Handled jobs of one queue that are deleted at once rather than wait deleteDelayMs (one DELETE per queue). */
const DELETE_BATCH_MAX = 500;

export interface QueueSubscription {
  /** pg-boss queue name. */
  name: string;
  /** Global limit per group (a svc queue's concurrencyLimit, per concurrencyKey). */
  concurrencyLimit?: number | null;
}

export interface ConsumerOptions {
  concurrency: number;
  /**
   * How often every subscribed queue is looked at, busy or idle: the safety net for jobs no wake-up
   * announced (pg-boss retries, a NOTIFY missed or sent to another worker that is full or died).
   */
  pollIntervalMs: number;
  /** How often in-flight jobs are touched (pg-boss heartbeat). */
  heartbeatIntervalMs: number;
  /**
   * How long handled jobs of a queue without a concurrency limit wait for company before a DELETE
   * of their own. Meanwhile the next fetch of their queue deletes them (fetchDeleting), so that
   * under load they cost no statement at all, and otherwise one DELETE takes the jobs of several
   * fetches. Nothing waits on it: the run's own rows already say it ended, and a job deleted late
   * is only delivered again if the worker dies first, whose claim then finds the run ended. A
   * limited queue's jobs are deleted at once: that frees their group for its next job. @default 100
   */
  deleteDelayMs?: number;
  /**
   * What a fetch of `queue` (one without a concurrency limit) also does with the jobs it fetches,
   * in the same statement (fetchWithTail); null: nothing. Asked at each fetch.
   */
  fetchAlso?: (queue: string) => FetchTail | null;
  /**
   * Where the fetches of queues without a concurrency limit run, their text constant for each
   * queue (fetchWithBatchSizeParameter), so that it may prepare them: a worker passes its pool
   * with named statements. Default: pg-boss's own connection, unprepared. A fetch whose text was
   * not recognized runs there too.
   */
  preparedFetchDb?: QueueDb;
  /** Slots taken by work that did not come through pg-boss (the resume fast path). */
  externalInFlight?: () => number;
  /** Called after a job took a slot and after one gave its slot back (freeSlots() changed). */
  onSlotsChanged?: () => void;
  /**
   * Executes a job. `release()` gives its slot back before the returned promise settles (once the
   * task code is done and only bookkeeping writes remain), so the next fetch overlaps them; the
   * job itself stays in flight (heartbeats, completion) until the promise settles.
   */
  handle(job: ConsumedJob, release: () => void): Promise<void>;
  onError(error: unknown): void;
  /**
   * Runs the fetch of a queue that has a concurrencyLimit while holding a lock on that queue.
   * pg-boss counts a group's active jobs in the fetch statement's own snapshot, so two workers
   * fetching at the same moment could each see the group idle and both claim a job from it.
   */
  serializeFetch?: <T>(queue: string, fetch: (db: QueueDb) => Promise<T>) => Promise<T>;
}

/** The connection a fetch runs on (pg-boss's `db` option). */
export interface QueueDb {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/**
 * Claims jobs from pg-boss into a fixed number of slots. One loop per process, one fetch pass at a
 * time (wake-ups during a pass make one more pass, not one each): it fetches, up to the free slot
 * count, from the queues that may hold jobs (`#pending`: named by a wake-up, left with jobs by a
 * pass cut short by the slots, or all of them at each poll); sleeps until a wake-up, a freed slot
 * or the poll; touches in-flight jobs as heartbeats; and deletes handled jobs in batches.
 *
 * A wake-up for one queue costs one fetch, of that queue: before, every pass fetched every
 * subscribed queue until the slots were full, so that with W workers woken by each NOTIFY and Q
 * queues a job could cost up to W × Q fetches, nearly all of them empty.
 */
export class JobConsumer {
  readonly #boss: PgBoss;
  readonly #options: ConsumerOptions;
  readonly #queues = new Map<string, QueueSubscription>();
  /**
   * Queues that may hold jobs this consumer has not fetched, in the order they became so (the
   * first named, the first fetched). See #fetchInto for when a queue leaves it and comes back.
   */
  readonly #pending = new Set<string>();
  readonly #inFlight = new Map<string, ConsumedJob>();
  /** In-flight jobs that still hold a slot (not yet released by their handler). */
  #holdingSlots = 0;
  #wake: (() => void) | null = null;
  /** Set when something may have made work available; a wake-up during a fetch is not lost. */
  #wakeRequested = false;
  #refillTimer: NodeJS.Timeout | null = null;
  #poll: NodeJS.Timeout | null = null;
  #stopping = false;
  /** Set by abandon(): jobs in flight are left to pg-boss's heartbeat expiry, never settled. */
  #abandoned = false;
  #loop: Promise<void> | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #drained: (() => void) | null = null;
  /** Handled jobs waiting to be deleted, and heartbeat touches. */
  readonly #writes: JobWrites;

  constructor(boss: PgBoss, options: ConsumerOptions) {
    this.#boss = boss;
    this.#options = options;
    this.#writes = new JobWrites(boss, {
      deleteDelayMs: options.deleteDelayMs ?? DELETE_DELAY_MS,
      onError: (error) => options.onError(error),
      // A limited queue's next job becomes fetchable only now that this one is no longer active.
      onDeleted: (queue) => this.#queues.get(queue)?.concurrencyLimit && this.notify(queue),
      onFlushed: () => this.#inFlight.size === 0 && this.#drained?.(),
    });
  }

  /**
   * Refill in batches: one fetch for many freed slots, not one per finished job. Past a quarter
   * of the slots free (or when idle) fetch now; below that, after a short coalescing delay.
   */
  #scheduleRefill(): void {
    // Nothing known to wait: the next wake-up or poll says when there is.
    if (this.#pending.size === 0) return;
    if (this.freeSlots() >= this.#refillThreshold || this.#holdingSlots === 0) return this.#requestWake();
    if (this.#refillTimer) return;
    this.#refillTimer = setTimeout(() => {
      this.#refillTimer = null;
      this.#requestWake();
    }, REFILL_DELAY_MS);
    this.#refillTimer.unref();
  }

  /** Freed slots worth a fetch: a quarter of the concurrency (at least one). */
  get #refillThreshold(): number {
    return Math.max(1, Math.floor(this.#options.concurrency / 4));
  }

  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  /**
   * A slot used by work outside pg-boss was freed. Fetch again only if some queue may hold jobs
   * (a pass was cut short by the slots, or a wake-up came while none was free); otherwise nothing
   * is lost by waiting.
   */
  slotFreed(): void {
    this.#scheduleRefill();
  }

  freeSlots(): number {
    return this.#options.concurrency - this.#holdingSlots - (this.#options.externalInFlight?.() ?? 0);
  }

  subscribe(queue: QueueSubscription): void {
    this.#queues.set(queue.name, queue);
    this.notify(queue.name);
  }

  /** Jobs may be waiting in `queue` (a wake-up named it), or in any queue (none named: a reconnect). */
  notify(queue?: string): void {
    if (queue === undefined) {
      for (const name of this.#queues.keys()) this.#pending.add(name);
    } else {
      if (!this.#queues.has(queue)) return;
      this.#pending.add(queue);
    }
    this.#requestWake();
  }

  #requestWake(): void {
    this.#wakeRequested = true;
    this.#wake?.();
  }

  start(): void {
    this.#loop = this.#run();
    this.#heartbeat = setInterval(() => void this.#writes.touch(() => this.#inFlight.values()), this.#options.heartbeatIntervalMs);
    this.#heartbeat.unref();
    // A fixed rhythm, not a timeout reset by every wake-up: a busy worker woken for one queue
    // still looks at the others.
    this.#poll = setInterval(() => this.notify(), this.#options.pollIntervalMs);
    this.#poll.unref();
  }

  #stopTimers(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    if (this.#poll) clearInterval(this.#poll);
    if (this.#refillTimer) clearTimeout(this.#refillTimer);
    this.#writes.stop();
  }

  /** Stops claiming; resolves once in-flight jobs have finished and been completed. */
  async drain(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#loop;
    if (this.#inFlight.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    await this.#writes.flush();
    this.#stopTimers();
  }

  /**
   * Stops at once, leaving in-flight jobs to pg-boss's heartbeat expiry. Handlers still settle
   * (their executions are aborted, not finished), but their jobs are not settled: a deleted job is
   * never delivered again, and its run would stay EXECUTING with nothing left to recover it.
   */
  abandon(): void {
    this.#stopping = true;
    this.#abandoned = true;
    this.#writes.clear();
    this.#wake?.();
    this.#stopTimers();
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      this.#wakeRequested = false;
      const free = this.freeSlots();
      let fetched = 0;
      if (free > 0 && this.#pending.size > 0) {
        try {
          fetched = await this.#fetchInto(free);
        } catch (error) {
          this.#options.onError(error);
        }
      }
      if (this.#stopping) break;
      // Full batch: there is probably more; go again at once (when slots allow).
      if (fetched > 0 && fetched === free) continue;
      // A wake-up or a finished job arrived while we were fetching: look again instead of sleeping.
      if (this.#wakeRequested) continue;
      // Until a wake-up: a NOTIFY, a freed slot, or the poll.
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = null;
    }
  }

  /**
   * One pass over the queues that may hold jobs, until the free slots are taken. A queue leaves
   * `#pending` as its fetch begins (a wake-up for it during the fetch puts it back: the job it
   * announces may have committed after the fetch's snapshot) and comes back when the fetch filled
   * the slots (more may wait) or failed; the queues the pass did not reach stay.
   */
  async #fetchInto(free: number): Promise<number> {
    let fetched = 0;
    for (const name of [...this.#pending]) {
      if (free - fetched <= 0 || this.#stopping) break;
      this.#pending.delete(name);
      const queue = this.#queues.get(name);
      if (!queue) continue;
      const batchSize = free - fetched;
      const limit = queue.concurrencyLimit;
      const serialize = this.#options.serializeFetch;
      let jobs: Job<ConsumedJob["data"]>[];
      try {
        jobs = (
          limit && serialize
            ? await serialize(name, (db) => this.#boss.fetch(name, { batchSize, groupConcurrency: limit, db }))
            : limit
              ? await this.#boss.fetch(name, { batchSize, groupConcurrency: limit })
              : await this.#fetchUnlimited(name, batchSize)
        ) as Job<ConsumedJob["data"]>[];
      } catch (error) {
        this.#pending.add(name);
        throw error;
      }
      if (jobs.length >= batchSize) this.#pending.add(name);
      for (const job of jobs) {
        fetched++;
        const fetchedWith = (job as { svc_with?: unknown }).svc_with;
        this.#launch({ id: job.id, queue: name, retryCount: job.retryCount, data: job.data, ...(fetchedWith !== undefined ? { fetchedWith } : {}) });
      }
    }
    return fetched;
  }

  /**
   * A fetch of a queue without a concurrency limit, in one statement with what goes with it: the
   * deletion of the queue's handled jobs (fetchDeleting) and the options' fetchAlso (fetchWithTail).
   * Handled jobs go back to wait for their DELETE when the fetch fails or its text could not carry
   * them. A fetch carrying deletions runs in turn with heartbeat touches (JobWrites.serialized), as
   * a DELETE of its own would: a touch of jobs in flight racing the deletion of some could deadlock.
   * With its batch size a parameter, it runs on `preparedFetchDb` when given.
   */
  async #fetchUnlimited(name: string, batchSize: number): Promise<Job<ConsumedJob["data"]>[]> {
    const tail = this.#options.fetchAlso?.(name) ?? null;
    const handled = this.#writes.take(name);
    let carried = false;
    const db: QueueDb = {
      executeSql: (text, values) => {
        const statement = consumerFetch(text, values, { handled: carried ? null : handled, tail });
        carried ||= statement.carried;
        const target = (statement.constant && this.#options.preparedFetchDb) || (this.#boss.getDb() as QueueDb);
        return target.executeSql(statement.text, statement.values);
      },
    };
    const giveBack = () => handled && this.#writes.giveBack(name, handled, this.#stopping);
    const fetch = () => this.#boss.fetch<ConsumedJob["data"]>(name, { batchSize, db });
    try {
      const jobs = await (handled ? this.#writes.serialized(fetch) : fetch());
      if (!carried) giveBack();
      return jobs;
    } catch (error) {
      giveBack();
      throw error;
    }
  }

  #launch(job: ConsumedJob): void {
    this.#inFlight.set(job.id, job);
    this.#holdingSlots++;
    this.#options.onSlotsChanged?.();
    let holding = true;
    const release = () => {
      if (!holding) return;
      holding = false;
      this.#holdingSlots--;
      this.#options.onSlotsChanged?.();
      this.#scheduleRefill();
    };
    this.#options.handle(job, release).then(
      () => {
        this.#inFlight.delete(job.id);
        if (this.#abandoned) {
          release();
          if (this.#inFlight.size === 0 && this.#drained) this.#drained();
          return;
        }
        const waiting = this.#writes.add(job);
        this.#writes.schedule(Boolean(this.#queues.get(job.queue)?.concurrencyLimit) || waiting >= DELETE_BATCH_MAX || this.#stopping);
        release();
      },
      (error: unknown) => {
        // The run's state could not be recorded (e.g. the database was unreachable): completing the
        // job would strand the run. Left active and no longer touched, pg-boss delivers it again
        // once its heartbeat lapses, and the claim takes the run over as a crashed attempt.
        this.#options.onError(error);
        this.#inFlight.delete(job.id);
        release();
        if (this.#inFlight.size === 0 && this.#drained) this.#drained();
      },
    );
  }
}
