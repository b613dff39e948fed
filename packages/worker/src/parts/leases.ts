import { retryOnConflict } from "@svc/runtime/db";
import type { ActiveExecutions } from "../execution/active-executions.ts";
import { renewLeases } from "../execution/claim.ts";
import { abortLostExecutions } from "../execution/lost-executions.ts";
import type { ListenerLock, Offers } from "./offers.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * Keeps what this worker holds by lease alive, every `leaseMs / 3`: the leases of its
 * executions and its registry entry. An execution whose lease lapses anyway
 * (this worker stalled) is another's to take over; an execution whose run was canceled or taken
 * over is aborted here.
 */
export class Leases {
  readonly #resources: WorkerResources;
  readonly #active: ActiveExecutions;
  readonly #offers: Offers;
  readonly #listener: ListenerLock;
  #timer: NodeJS.Timeout | null = null;

  constructor(resources: WorkerResources, active: ActiveExecutions, offers: Offers, listener: ListenerLock) {
    this.#resources = resources;
    this.#active = active;
    this.#offers = offers;
    this.#listener = listener;
  }

  /** One round: renews the registry entry and the leases, aborts executions that lost their run. */
  async check(): Promise<void> {
    const { engine, config, report } = this.#resources;
    await Promise.all([
      this.#offers.renew(this.#listener).catch((error) => report(error, "registry")),
      retryOnConflict(() => renewLeases(engine.db, this.#active.leases(), engine.clock.now(), config.leaseMs)).catch((error) => report(error, "leases")),
      abortLostExecutions(engine.db, this.#active).catch((error) => report(error, "leases")),
    ]);
  }

  start(): void {
    this.#timer = setInterval(() => void this.check(), Math.max(1000, Math.floor(this.#resources.config.leaseMs / 3)));
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
