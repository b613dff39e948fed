import { preparedText } from "@svc/runtime/db";
import { isStartQueueName, JobConsumer, type ConsumedJob, type QueueSubscription } from "@svc/queue";
import { claimFromFetch, startClaimsInFetch } from "../execution/claim.ts";
import type { Dispatch } from "../execution/execute-run.ts";
import type { Executions } from "./executions.ts";
import type { FullFlag } from "./full-flag.ts";
import { fetchUnderQueueLock } from "./queue-fetch-lock.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * The worker's concurrency slots. pg-boss jobs take theirs through the consumer; leased executions
 * (fast-path resumes and offers, which hold a lease instead of a job) take theirs here, and the
 * consumer counts them. Also whether the worker still takes new work at all (`draining`).
 */
export class Slots {
  readonly #consumer: JobConsumer;
  readonly #executions: Executions;
  readonly #report: WorkerResources["report"];
  /** Leased executions not yet ended (drain waits for them)… */
  #leased = 0;
  /** …and those whose task code still runs: they hold a slot (an ending being written does not). */
  #leasedInSlots = 0;
  /** Slots reserved for runs being claimed (reserve): taken for fetches, free for the full flag. */
  #reserved = 0;
  #leasedIdle: (() => void) | null = null;
  #draining = false;
  readonly #concurrency: number;
  readonly #fullFlag: FullFlag;

  /** `fullFlag` hears of every change of the free slots (it writes only when the worker fills up or stops being full). */
  constructor({ engine, queue, config, report, worker }: WorkerResources, executions: Executions, fullFlag: FullFlag) {
    this.#executions = executions;
    this.#report = report;
    this.#concurrency = config.concurrency;
    this.#fullFlag = fullFlag;
    this.#consumer = new JobConsumer(queue.boss, {
      concurrency: config.concurrency,
      pollIntervalMs: config.pollIntervalMs,
      heartbeatIntervalMs: 4000,
      externalInFlight: () => this.#leasedInSlots + this.#reserved,
      onSlotsChanged: () => this.#slotsChanged(),
      // A start queue's fetch claims the runs of the jobs it takes, in the same statement.
      fetchAlso: (queueName) => (isStartQueueName(queueName) ? startClaimsInFetch(worker, engine.clock.now()) : null),
      // Prepared on the worker's pool, so that a fetch is planned once per connection.
      preparedFetchDb: { executeSql: (text, values) => engine.db.query(preparedText(text, values ?? [])) },
      handle: (job: ConsumedJob, release) => executions.run(dispatchOf(job), release),
      onError: (error) => report(error, "consumer"),
      serializeFetch: (queueName, fetch) => fetchUnderQueueLock(engine.db, queueName, fetch),
    });
  }

  /** Set by drain and abandon: from then on this worker takes no new work, fast path and offers included. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Slots taken now: pg-boss jobs whose code runs, and leased executions. */
  get inUse(): number {
    return this.#concurrency - this.#consumer.freeSlots();
  }

  /** Whether a leased execution may start now: not draining, and a slot is free. */
  get canTakeLeased(): boolean {
    return !this.#draining && this.#consumer.freeSlots() > 0;
  }

  /**
   * Reserves up to `wanted` free slots for runs about to be claimed (none while draining): counted
   * as taken until each is run (runLeased with `reserved`) or given back (unreserve), so that a
   * fetch made meanwhile does not take them too. Returns how many were reserved.
   */
  reserve(wanted: number): number {
    if (this.#draining) return 0;
    const granted = Math.max(0, Math.min(wanted, this.#consumer.freeSlots()));
    this.#reserved += granted;
    return granted;
  }

  /** Gives back `count` reserved slots that no claim came for. */
  unreserve(count: number): void {
    if (count <= 0) return;
    this.#reserved -= count;
    this.#consumer.slotFreed();
    this.#settled();
  }

  #waitingForReservations: (() => void)[] = [];

  /**
   * When no slot is free now but some are reserved for a claim from `runs` under way (they may be
   * free again in a moment), calls `then` once that claim returned, and says so: the caller decides
   * then. False when there is nothing to wait for (the caller decides now).
   */
  deferWhileReserving(then: () => void): boolean {
    if (this.canTakeLeased || this.#reserved === 0 || this.#draining) return false;
    this.#waitingForReservations.push(then);
    return true;
  }

  #settled(): void {
    if (this.#reserved > 0) return;
    const waiting = this.#waitingForReservations;
    this.#waitingForReservations = [];
    for (const then of waiting) then();
  }

  /**
   * Runs an execution that holds a lease, not a pg-boss job (fast path, offer), in a slot of its
   * own. The slot is free again once its task code is done, while the write that records how it
   * ended is still under way, as a job's is.
   */
  runLeased(dispatch: Dispatch, options: { reserved?: boolean } = {}): void {
    this.#leased++;
    this.#leasedInSlots++;
    if (options.reserved) {
      this.#reserved--;
      this.#settled();
    }
    this.#slotsChanged();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#leasedInSlots--;
      this.#slotsChanged();
      this.#consumer.slotFreed();
    };
    this.#executions
      .run(dispatch, release)
      .catch((error) => this.#report(error, "resume"))
      .finally(() => {
        release();
        this.#leased--;
        if (this.#leased === 0) this.#leasedIdle?.();
      });
  }

  readonly #freedListeners: (() => void)[] = [];

  /** Calls `listener` whenever the free slots change and at least one is free. */
  onSlotFreed(listener: () => void): void {
    this.#freedListeners.push(listener);
  }

  #slotsChanged(): void {
    // Reserved slots are not taken yet: the registry hears of them once a claim fills them.
    this.#fullFlag.set(this.#consumer.freeSlots() + this.#reserved <= 0);
    if (this.#consumer.freeSlots() > 0 && !this.#draining) for (const listener of this.#freedListeners) listener();
  }

  subscribe(queue: QueueSubscription): void {
    this.#consumer.subscribe(queue);
  }

  /** Jobs may be waiting in `queue` (a pg-boss NOTIFY), or anywhere (no queue named). */
  notify(queue?: string): void {
    this.#consumer.notify(queue);
  }

  start(): void {
    this.#consumer.start();
  }

  /** Takes no new work from now on (see `draining`). */
  close(): void {
    this.#draining = true;
  }

  /** Waits until every execution has ended, jobs and leased ones (after close()). */
  async drain(): Promise<void> {
    await this.#consumer.drain();
    // Leased executions end by finishing, suspending again or being abandoned: wait for the count.
    if (this.#leased > 0) await new Promise<void>((resolve) => (this.#leasedIdle = resolve));
  }

  /** Stops at once: jobs in flight are left to pg-boss's heartbeat expiry. */
  abandon(): void {
    this.#draining = true;
    this.#consumer.abandon();
  }
}

/** What executes a job: a start with the claim its fetch made (when it made one), or a resume. */
function dispatchOf(job: ConsumedJob): Dispatch {
  const { runId, kind } = job.data;
  if (kind !== "start") return { kind: "resume", runId, jobId: job.id };
  return job.fetchedWith === undefined ? { kind: "start", runId, jobId: job.id } : { kind: "start", runId, jobId: job.id, claimed: claimFromFetch(job.fetchedWith) };
}
