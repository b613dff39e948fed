import { claimQueued } from "../execution/claim.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/** At most this many runs a claim statement (a worker with more free slots claims again at once). */
const CLAIM_BATCH = 100;

/**
 * Plain queued runs, claimed straight from `runs` (CLAIM_QUEUED_SQL), no job in between: as many
 * as this worker has free slots, when a trigger wakes it (wakeWorkers names its start queues), when
 * a slot frees up while runs were left behind, and every `pollIntervalMs` (what takes runs whose
 * woken worker was full, died or missed the NOTIFY). Each claim runs as a leased execution.
 */
export class QueuedRuns {
  readonly #resources: WorkerResources;
  readonly #slots: Slots;
  #running = false;
  #again = false;
  /** The last claim filled every slot it had: more runs may be waiting for the next free one. */
  #backlog = false;
  #poll: NodeJS.Timeout | null = null;

  constructor(resources: WorkerResources, slots: Slots) {
    this.#resources = resources;
    this.#slots = slots;
    slots.onSlotFreed(() => {
      if (this.#backlog) this.notify();
    });
  }

  start(): void {
    this.notify();
    this.#poll = setInterval(() => this.notify(), this.#resources.config.pollIntervalMs);
  }

  stop(): void {
    if (this.#poll) clearInterval(this.#poll);
    this.#poll = null;
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

  async #pass(): Promise<void> {
    const { claimPool, worker, engine, config, report } = this.#resources;
    for (;;) {
      const reserved = this.#slots.reserve(CLAIM_BATCH);
      if (reserved === 0) {
        // Woken with no slot free: runs may wait for the next one (unless this worker is stopping).
        this.#backlog = !this.#slots.draining;
        return;
      }
      let claimed = 0;
      try {
        const claims = await claimQueued(claimPool, { id: worker.id, version: worker.version, environmentId: worker.environment.id, tasks: worker.taskIds }, reserved, engine.clock.now(), config.leaseMs);
        claimed = claims.length;
        for (const claim of claims) this.#slots.runLeased({ kind: "queued", runId: claim.run.id, claimed: claim }, { reserved: true });
      } catch (error) {
        report(error, "claim");
        this.#backlog = false;
        return;
      } finally {
        this.#slots.unreserve(reserved - claimed);
      }
      this.#backlog = claimed === reserved;
      if (!this.#backlog) return;
    }
  }
}
