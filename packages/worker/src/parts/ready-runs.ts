import { controlledQueues, queuesGatedOn, queuesWithLiveRuns, wakeGateWaiters, wakeLimitWaiters } from "@svc/runtime/engine";
import { claimLimited, claimRateLimited, claimReady, type Claim, type Claimer } from "../execution/claim.ts";
import { namedLimitQueues } from "../tasks/register-tasks.ts";
import { limitedQueues, rateLimitedQueues, startQueues } from "./queues.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/** At most this many runs a claim statement (a worker with more free slots claims again at once). */
const CLAIM_BATCH = 100;

/**
 * Runs claimed straight from `runs`, the one queue: due starts and resumes of this worker's tasks
 * (the plain claim), then those of each of its queues with a concurrencyLimit (that queue's claim,
 * which counts the limit), as many as it has free slots. It claims when woken (a trigger or
 * completion names its queues: engine/runs/wake-workers.ts; svc_runs_ready for its environment),
 * when a slot frees up while runs were left behind, and every `pollIntervalMs` (what takes runs
 * whose woken worker was full, died or missed the NOTIFY). Each claim runs as a leased execution.
 * The queues it claims with a limit are those its tasks declare a concurrencyLimit or a rateLimit on, and those of
 * its queues an operator paused or overrode (read at start, and again when told: queuesChanged),
 * and those that have had runs holding a named concurrency limit (a trigger of one tells:
 * queuesChanged; the queues of its tasks that declare `concurrency` from the start), whose claims
 * also take the named limits' lock, or runs with gates (likewise), whose claims also take their
 * gate queues' locks, or runs with their own rate (likewise), claimed as a rate-limited queue is.
 */
export class ReadyRuns {
  readonly #resources: WorkerResources;
  readonly #slots: Slots;
  readonly #claimer: Claimer;
  /** The queues its tasks declare a concurrencyLimit or a rateLimit on. */
  readonly #declared: string[];
  /** All its queues: those an operator controls are looked for among them. */
  readonly #queues: string[];
  #limited: string[];
  #limitedSet: Set<string>;
  /**
   * Its queues that have had runs holding a named concurrency limit. Kept once seen (a run may
   * leave the claim's sight, delayed for a retry, and come back without anyone saying so).
   */
  readonly #named = new Set<string>();
  /** Its queues that have had runs with gates, kept once seen likewise. */
  readonly #gated = new Set<string>();
  /** Its queues that live runs of any queue name in a gate (re-read with the controls): a run of theirs that ends frees a pool others wait for. */
  #gatedOn = new Set<string>();
  /** Bumped by each read of the controlled queues: only the latest one's answer is kept. */
  #controlsRead = 0;
  /**
   * The limited queues with a rateLimit, or that have had runs with their own (kept once seen, as
   * #named), and the timer of each whose next run's slot is due later.
   */
  readonly #rated: Set<string>;
  readonly #rateTimers = new Map<string, () => void>();
  #running = false;
  #again = false;
  /** The last pass filled every slot it had: more runs may be waiting for the next free one. */
  #backlog = false;
  #poll: NodeJS.Timeout | null = null;

  constructor(resources: WorkerResources, slots: Slots) {
    this.#resources = resources;
    this.#slots = slots;
    const { worker, tasks } = resources;
    this.#claimer = { id: worker.id, version: worker.version, environmentId: worker.environment.id, tasks: worker.taskIds };
    // The queues of its tasks that declare concurrency limits hold runs that hold them from the start.
    for (const queue of namedLimitQueues(tasks)) this.#named.add(queue);
    this.#declared = [...new Set([...limitedQueues(tasks), ...this.#named])];
    this.#queues = [...startQueues(tasks).keys()];
    this.#limited = this.#declared;
    this.#limitedSet = new Set(this.#limited);
    this.#rated = rateLimitedQueues(tasks);
    slots.onSlotFreed(() => {
      if (this.#backlog) this.notify();
    });
  }

  /**
   * Reads which of its queues an operator paused or overrode (their runs are claimed by the queue's
   * claim, as a declared limit's), then claims: what a queuesChanged NOTIFY, a reconnect and the
   * start do.
   */
  async readControls(): Promise<void> {
    const read = ++this.#controlsRead;
    const { engine, worker } = this.#resources;
    const [controlled, { named, gated, ownRated }, gatedOn] = await Promise.all([
      controlledQueues(engine.db, worker.environment.id, this.#queues),
      queuesWithLiveRuns(engine.db, worker.environment.id, this.#queues),
      queuesGatedOn(engine.db, worker.environment.id, this.#queues),
    ]);
    if (read !== this.#controlsRead) return;
    this.#gatedOn = new Set(gatedOn);
    for (const queue of named) this.#named.add(queue);
    for (const queue of gated) this.#gated.add(queue);
    for (const queue of ownRated) this.#rated.add(queue);
    this.#limited = [...new Set([...this.#declared, ...controlled, ...this.#named, ...this.#gated, ...this.#rated])];
    this.#limitedSet = new Set(this.#limited);
    this.notify();
  }

  /** readControls, its error reported (a NOTIFY's handler). */
  controlsChanged(): void {
    this.readControls().catch((error) => this.#resources.report(error, "queues"));
  }

  async start(): Promise<void> {
    await this.readControls();
    this.#poll = setInterval(() => this.notify(), this.#resources.config.pollIntervalMs);
  }

  stop(): void {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
    for (const cancel of this.#rateTimers.values()) cancel();
    this.#rateTimers.clear();
  }

  /** Runs may be waiting: claim as many as there are free slots (one pass at a time). */
  notify(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#pass().finally(() => {
      this.#running = false;
      if (this.#again) {
        this.#again = false;
        this.notify();
      }
    });
  }

  /** Runs were left for later (no free slot): claim when one frees up. */
  leftBehind(): void {
    if (!this.#slots.draining) this.#backlog = true;
  }

  async #pass(): Promise<void> {
    const { claimPool, engine, config } = this.#resources;
    const claims: ((limit: number) => Promise<Claim[]>)[] = [
      (limit) => claimReady(claimPool, this.#claimer, limit, engine.clock.now(), config.leaseMs),
      ...this.#limited.map((queue) =>
        this.#rated.has(queue)
          ? (limit: number) => this.#claimRated(queue, limit)
          : (limit: number) => claimLimited(claimPool, this.#claimer, queue, limit, engine.clock.now(), config.leaseMs, this.#claimOptions(queue)),
      ),
    ];
    let full = false;
    for (const claim of claims) {
      const result = await this.#claimAll(claim);
      if (result === null) return;
      full = result;
      if (full) break;
    }
    // Woken with no slot free, or every slot filled: runs may wait for the next free one.
    this.#backlog = full && !this.#slots.draining;
    this.#resources.events.emit("claimsPassed", { full });
  }

  /** Which runs besides its plain ones the claim of `queue` takes (and so which locks it holds). */
  #claimOptions(queue: string): { named: boolean; gated: boolean } {
    return { named: this.#named.has(queue), gated: this.#gated.has(queue) };
  }

  /**
   * A rate-limited queue's claim. Runs left waiting for their rate get a timer to claim when the
   * first one's slot is due (one per queue, the latest answer replacing it): no poll faster than
   * the rate needs, and no start before its slot, which the claim itself refuses anyway.
   */
  async #claimRated(queue: string, limit: number): Promise<Claim[]> {
    const { claimPool, engine, config, events, hooks } = this.#resources;
    const now = engine.clock.now();
    const { claims, rate } = await claimRateLimited(claimPool, this.#claimer, queue, limit, now, config.leaseMs, this.#claimOptions(queue));
    if (rate !== null) {
      events.emit("rateLimited", { queue, waiting: rate.waiting, dueAt: rate.dueAt, newlyDelayed: rate.newlyDelayed });
      this.#rateTimers.get(queue)?.();
      this.#rateTimers.delete(queue);
      if (rate.dueAt !== null && this.#poll !== null) {
        // The injected timers (a FakeClock in tests), as maxDuration's.
        const cancel = hooks.timers.after(Math.max(0, rate.dueAt.getTime() - now.getTime()), () => {
          this.#rateTimers.delete(queue);
          this.notify();
        });
        this.#rateTimers.set(queue, cancel);
      }
    }
    return claims;
  }

  /**
   * A run this worker claimed from a limited queue ended: claim again, and wake the workers waiting
   * for the named limits it held, or for the gate pools it freed (its gates', or its queue's when
   * others are gated on it).
   */
  #ended(runId: string, queue: string): void {
    this.notify();
    const { engine } = this.#resources;
    const report = (error: unknown) => this.#resources.report(error, "claim");
    if (this.#named.has(queue)) wakeLimitWaiters(engine.db, runId, engine.clock.now()).catch(report);
    if (this.#gated.has(queue) || this.#gatedOn.has(queue)) wakeGateWaiters(engine.db, runId, engine.clock.now()).catch(report);
  }

  /** Claims with `claim` until it finds fewer runs than free slots; true when the slots ran out first, null on an error. */
  async #claimAll(claim: (limit: number) => Promise<Claim[]>): Promise<boolean | null> {
    for (;;) {
      const reserved = this.#slots.reserve(CLAIM_BATCH);
      if (reserved === 0) return true;
      let claimed = 0;
      try {
        const claims = await claim(reserved);
        claimed = claims.length;
        for (const c of claims) {
          // A run of a limited queue that ends (finished, waiting, retrying) frees a slot of its
          // queue: claim again, as no trigger will say so. One that may hold named limits or gates
          // frees a slot of each of them too: wake the workers of the other queues waiting for them.
          const queue = c.run.queue_name;
          const onEnded = this.#limitedSet.has(queue) ? () => this.#ended(c.run.id, queue) : undefined;
          this.#slots.run({ kind: "claimed", runId: c.run.id, claimed: c }, { reserved: true, onEnded });
        }
      } catch (error) {
        this.#resources.report(error, "claim");
        this.#backlog = false;
        return null;
      } finally {
        this.#slots.unreserve(reserved - claimed);
      }
      if (claimed < reserved) return false;
    }
  }
}
