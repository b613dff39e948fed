import { markWorkerFree, markWorkerFull } from "../registry/workers.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * How long a worker that was full must have had a free slot before its row says so. A worker
 * running near full flips between full and not full with nearly every run (a run ends, the next
 * offer takes its slot a few ms later): the flips back within this time cost no write, and while
 * the row still says full, offers go to workers that said they have a slot.
 */
export const FREE_SETTLE_MS = 10;

/**
 * Whether this worker is full, as its registry row says it (workers.full_since, migration 0028):
 * completions offer resumes to workers with a free slot when there is one, so that a full worker
 * is not offered runs it can only give back.
 *
 * Written on transitions only, when the last free slot is taken (at once: offers to a full worker
 * are given back) and when one has been free for FREE_SETTLE_MS, never per run: a worker that never
 * fills up never writes it, and the resume path itself pays only a comparison. One write at a
 * time: a transition during a write is written once that one has returned (the latest state
 * wins; a flip and back while writing costs no write at all). The
 * writes go through the claim pool (no wait for the WAL flush): the flag is advice, and a flag
 * lost in a crash is rewritten by the next registration. A failed write is reported and tried
 * again at the next transition or renewal (`publish`).
 */
export class FullFlag {
  readonly #resources: WorkerResources;
  /** Full now (no free slot), by the slots' count. */
  #full = false;
  /** Since when, by the worker's clock (what a write records). */
  #fullSince: Date | null = null;
  /** What the row says, as far as this worker knows; null after a failed write (unknown). */
  #written: boolean | null = false;
  #writing = false;
  /** Set while a free slot settles (FREE_SETTLE_MS) before the row says so. */
  #settling: NodeJS.Timeout | null = null;

  constructor(resources: WorkerResources) {
    this.#resources = resources;
  }

  /** Full now: since when (null: a slot is free); what a registration writes. */
  get fullSince(): Date | null {
    return this.#fullSince;
  }

  /** The slots changed: `full` is whether none is free now. Writes the row if that is news. */
  set(full: boolean): void {
    if (full === this.#full) return;
    this.#full = full;
    this.#fullSince = full ? this.#resources.engine.clock.now() : null;
    if (full) {
      if (this.#settling) clearTimeout(this.#settling);
      this.#settling = null;
      this.publish();
    } else {
      this.#settling = setTimeout(() => {
        this.#settling = null;
        this.publish();
      }, FREE_SETTLE_MS);
      this.#settling.unref();
    }
  }

  /** A registration wrote the row with `fullSince` as it was then. */
  registered(fullSince: Date | null): void {
    this.#written = fullSince !== null;
    this.publish();
  }

  /**
   * Writes the current state unless the row already says it, a write is under way (it follows up)
   * or a free slot is still settling (the timer follows up).
   */
  publish(): void {
    if (this.#writing || this.#settling || this.#written === this.#full) return;
    this.#writing = true;
    const full = this.#full;
    const { claimPool, worker, report } = this.#resources;
    const write = full ? markWorkerFull(claimPool, worker.id, this.#fullSince!) : markWorkerFree(claimPool, worker.id);
    write.then(
      (changed) => {
        // Changed or not (the row already said so, or is missing until the next registration),
        // the row now agrees.
        this.#written = full;
        this.#writing = false;
        this.#resources.events.emit("fullnessRecorded", { full, changed });
        this.publish();
      },
      (error: unknown) => {
        this.#written = null;
        this.#writing = false;
        report(error, "registry");
      },
    );
  }
}
