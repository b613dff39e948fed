import { parseResumePayload } from "@svc/runtime/engine";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * The resume fast path: a NOTIFY on the resume channel names runs whose resume is due, announced
 * to every worker; this one claims them directly (first come, one guarded UPDATE), no pg-boss fetch.
 */
export class FastPath {
  readonly #environmentId: string;
  readonly #slots: Slots;

  constructor({ worker }: WorkerResources, slots: Slots) {
    this.#environmentId = worker.environment.id;
    this.#slots = slots;
  }

  /** Claims the runs a resume NOTIFY names, while this worker has free slots. */
  resume(payload: string): void {
    const parsed = parseResumePayload(payload);
    if (!parsed || parsed.environmentId !== this.#environmentId) return;
    if (this.#slots.deferWhileReserving(() => this.resume(payload))) return;
    for (const runId of parsed.runIds) {
      // Left for later: the timer loop hands a resume nobody took to pg-boss when it is due.
      if (!this.#slots.canTakeLeased) return;
      this.#slots.runLeased({ kind: "resume", runId, jobId: null });
    }
  }
}
