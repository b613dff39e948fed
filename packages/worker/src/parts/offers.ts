import { claimFromCache, loadOffer, parseOffer, type Offer } from "../execution/offers.ts";
import { registerWorker, renewWorker, unregisterWorker, type Heartbeat, type WorkerRecord } from "../registry/workers.ts";
import type { WorkerBatchers } from "./batchers.ts";
import type { FullFlag } from "./full-flag.ts";
import { startQueues } from "./queues.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/** The connection this worker's registry entry names: live while it holds its session lock. */
export interface ListenerLock {
  /** Null while disconnected. */
  readonly sessionLock: string | null;
}

/**
 * Resume offers: a completion offers a resume, already claimed, to one live worker of the registry,
 * on that worker's own channel. Holds this worker's registry entry (what makes offers come) and
 * takes the offers that come.
 */
export class Offers {
  readonly #resources: WorkerResources;
  readonly #slots: Slots;
  readonly #declines: WorkerBatchers["declines"];
  readonly #fullFlag: FullFlag;
  readonly #record: Omit<WorkerRecord, "startedAt">;
  /** When this worker first entered the registry; kept when it enters again. */
  #startedAt: Date | null = null;

  constructor(resources: WorkerResources, slots: Slots, declines: WorkerBatchers["declines"], fullFlag: FullFlag) {
    this.#resources = resources;
    this.#slots = slots;
    this.#declines = declines;
    this.#fullFlag = fullFlag;
    const { worker, config, tasks } = resources;
    this.#record = {
      id: worker.id,
      environmentId: worker.environment.id,
      tasks: worker.taskIds,
      version: worker.version,
      slots: config.concurrency,
      // The queues whose ready runs it claims: a trigger into one of them wakes it.
      queues: [...startQueues(tasks).keys()],
      leaseMs: config.leaseMs,
    };
  }

  /** Enters this worker in the registry under the listener's connection (again after a reconnect); not while draining. */
  async enter(listener: ListenerLock): Promise<void> {
    const lock = listener.sessionLock;
    if (!lock || this.#slots.draining) return;
    const heartbeat = this.#heartbeat();
    this.#startedAt ??= heartbeat.at;
    const fullSince = this.#fullFlag.fullSince;
    await registerWorker(this.#resources.engine.db, { ...this.#record, startedAt: this.#startedAt }, lock, { ...heartbeat, fullSince });
    this.#fullFlag.registered(fullSince);
  }

  /**
   * Keeps the entry live and records the slots in use now (what the dashboard shows); enters it
   * again if it was removed (while this worker was unreachable).
   */
  async renew(listener: ListenerLock): Promise<void> {
    if (!(await renewWorker(this.#resources.engine.db, this.#record.id, this.#heartbeat()))) await this.enter(listener);
    // A full flag whose write failed is written again here.
    this.#fullFlag.publish();
  }

  /** Takes this worker out of the registry: no more offers come (drain). */
  withdraw(): Promise<void> {
    return unregisterWorker(this.#resources.engine.db, this.#record.id);
  }

  /**
   * An offer NOTIFY: a resume already claimed for this worker. Runs it now, or gives it back at
   * once (no free slot, draining) so that another worker claims it from `runs`.
   */
  take(payload: string): void {
    const { report } = this.#resources;
    let offer: Offer;
    try {
      offer = parseOffer(payload);
    } catch (error) {
      report(error, "offer");
      return;
    }
    if (!this.#slots.deferWhileReserving(() => this.#takeParsed(offer))) this.#takeParsed(offer);
  }

  #takeParsed(offer: Offer): void {
    const { engine, report } = this.#resources;
    const { runId, claimToken } = offeredRun(offer);
    if (!this.#slots.canTake) {
      const reason = this.#slots.draining ? "draining" : "full";
      this.#declines.add({ runId, claimToken }).then(
        (givenBack) => givenBack && this.#resources.events.emit("offerGivenBack", { runId, reason }),
        (error) => report(error, "offer"),
      );
      return;
    }
    // An offer with only the entries its completion resolved: this worker's copy of the rest, or
    // the whole ledger loaded when the copy is gone or behind.
    const claim = "claim" in offer ? offer.claim : ("resolved" in offer && claimFromCache(this.#resources.ledgers, offer.resolved)) || loadOffer(engine.db, runId, claimToken);
    this.#slots.run({ kind: "offer", runId, claimToken, claim });
  }

  /** Now by the worker's clock, live for one lease from now, and the slots taken. */
  #heartbeat(): Heartbeat {
    const at = this.#resources.engine.clock.now();
    return { at, aliveUntil: new Date(at.getTime() + this.#resources.config.leaseMs), slotsInUse: this.#slots.inUse };
  }
}

/** The run an offer is for, and the claim token the completion claimed it with. */
function offeredRun(offer: Offer): { runId: string; claimToken: string } {
  if ("claimToken" in offer) return offer;
  const { run } = "claim" in offer ? offer.claim : offer.resolved;
  return { runId: run.id, claimToken: run.claim_token! };
}
