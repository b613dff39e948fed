import type { Dispatch } from "../execution/execute-run.ts";
import type { Executions } from "./executions.ts";
import type { FullFlag } from "./full-flag.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * The worker's concurrency slots: every execution (an offer taken, a resume claimed on NOTIFY, a
 * run claimed from `runs`) holds one while its task code runs, and a lease on its run. Also whether
 * the worker still takes new work at all (`draining`).
 */
export class Slots {
  readonly #executions: Executions;
  readonly #report: WorkerResources["report"];
  /** Executions not yet ended (drain waits for them)… */
  #running = 0;
  /** …and those whose task code still runs: they hold a slot (an ending being written does not). */
  #inSlots = 0;
  /** Slots reserved for runs being claimed (reserve): taken for other claims, free for the full flag. */
  #reserved = 0;
  #idle: (() => void) | null = null;
  #draining = false;
  readonly #concurrency: number;
  readonly #fullFlag: FullFlag;

  /** `fullFlag` hears of every change of the free slots (it writes only when the worker fills up or stops being full). */
  constructor({ config, report }: WorkerResources, executions: Executions, fullFlag: FullFlag) {
    this.#executions = executions;
    this.#report = report;
    this.#concurrency = config.concurrency;
    this.#fullFlag = fullFlag;
  }

  /** Set by drain and abandon: from then on this worker takes no new work, offers included. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Slots taken now: executions whose code runs, and slots reserved for claims under way. */
  get inUse(): number {
    return this.#inSlots + this.#reserved;
  }

  #free(): number {
    return this.#concurrency - this.inUse;
  }

  /** Whether an execution may start now: not draining, and a slot is free. */
  get canTake(): boolean {
    return !this.#draining && this.#free() > 0;
  }

  /**
   * Reserves up to `wanted` free slots for runs about to be claimed (none while draining): counted
   * as taken until each is run (run with `reserved`) or given back (unreserve), so that another
   * claim made meanwhile does not take them too. Returns how many were reserved.
   */
  reserve(wanted: number): number {
    if (this.#draining) return 0;
    const granted = Math.max(0, Math.min(wanted, this.#free()));
    this.#reserved += granted;
    return granted;
  }

  /** Gives back `count` reserved slots that no claim came for. */
  unreserve(count: number): void {
    if (count <= 0) return;
    this.#reserved -= count;
    this.#slotsChanged();
    this.#settled();
  }

  #waitingForReservations: (() => void)[] = [];

  /**
   * When no slot is free now but some are reserved for a claim under way (they may be free again
   * in a moment), calls `then` once that claim returned, and says so: the caller decides then.
   * False when there is nothing to wait for (the caller decides now).
   */
  deferWhileReserving(then: () => void): boolean {
    if (this.canTake || this.#reserved === 0 || this.#draining) return false;
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
   * Runs an execution in a slot of its own. The slot is free again once its task code is done,
   * while the write that records how it ended is still under way. `onEnded` is called once the
   * execution ended (its ending written).
   */
  run(dispatch: Dispatch, options: { reserved?: boolean; onEnded?: () => void } = {}): void {
    this.#running++;
    this.#inSlots++;
    if (options.reserved) {
      this.#reserved--;
      this.#settled();
    }
    this.#slotsChanged();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#inSlots--;
      this.#slotsChanged();
    };
    this.#executions
      .run(dispatch, release)
      .catch((error) => this.#report(error, "execution"))
      .finally(() => {
        release();
        options.onEnded?.();
        this.#running--;
        if (this.#running === 0) this.#idle?.();
      });
  }

  readonly #freedListeners: (() => void)[] = [];

  /** Calls `listener` whenever the free slots change and at least one is free. */
  onSlotFreed(listener: () => void): void {
    this.#freedListeners.push(listener);
  }

  #slotsChanged(): void {
    // Reserved slots are not taken yet: the registry hears of them once a claim fills them.
    this.#fullFlag.set(this.#concurrency - this.#inSlots <= 0);
    if (this.#free() > 0 && !this.#draining) for (const listener of this.#freedListeners) listener();
  }

  /** Takes no new work from now on (see `draining`). */
  close(): void {
    this.#draining = true;
  }

  /** Waits until every execution has ended (after close()). */
  async drain(): Promise<void> {
    // Executions end by finishing, suspending again or being abandoned: wait for the count.
    if (this.#running > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
  }

  /** Stops at once: executions in flight are left to lapse (their leases are no longer renewed). */
  abandon(): void {
    this.#draining = true;
  }
}
