import { parseResumePayload } from "@svc/runtime/engine";
import type { ReadyRuns } from "./ready-runs.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/**
 * The resume fast path: a NOTIFY on the resume channel names runs whose resume is due, announced
 * to every worker; this one claims them by id (first come, one guarded UPDATE) while it has free
 * slots. What it leaves stays due in `runs`, where its claims (or another worker's) take it.
 */
export class FastPath {
  readonly #environmentId: string;
  readonly #slots: Slots;
  readonly #readyRuns: ReadyRuns;

  constructor({ worker }: WorkerResources, slots: Slots, readyRuns: ReadyRuns) {
    this.#environmentId = worker.environment.id;
    this.#slots = slots;
    this.#readyRuns = readyRuns;
  }

  /** Claims the runs a resume NOTIFY names, while this worker has free slots. */
  resume(payload: string): void {
    const parsed = parseResumePayload(payload);
    if (!parsed || parsed.environmentId !== this.#environmentId) return;
    if (this.#slots.deferWhileReserving(() => this.resume(payload))) return;
    for (const runId of parsed.runIds) {
      if (!this.#slots.canTake) {
        this.#readyRuns.leftBehind();
        return;
      }
      this.#slots.run({ kind: "resume", runId });
    }
  }
}
