import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { EngineDeps } from "../deps.ts";
import { MicroBatcher } from "../micro-batch.ts";
import type { Environment } from "../tenancy/environments.ts";
import { triggerRun, triggerRuns, type TriggerLineage, type TriggerResult } from "./trigger.ts";

interface Request {
  env: Environment;
  taskIdentifier: string;
  payload: unknown;
  options: TriggerOptions;
  lineage: TriggerLineage;
}

type Outcome = { ok: true; result: TriggerResult } | { ok: false; error: unknown };

/** How many statements of one environment's triggers an API process has under way at once (see MicroBatcher). */
const TRIGGERS_IN_FLIGHT = 2;

/**
 * Group commit for single triggers: requests of one environment that arrive in the same
 * event-loop turn share one statement, or one transaction (triggerRuns); while two groups are under
 * way, the next waits for one and takes everything that arrived meanwhile. If the group fails,
 * each request is retried alone, so one bad request never fails another.
 */
export class TriggerGroupCommitter {
  readonly #deps: EngineDeps;
  readonly #batchers = new Map<string, MicroBatcher<Request, Outcome>>();

  constructor(deps: EngineDeps) {
    this.#deps = deps;
  }

  async trigger(env: Environment, taskIdentifier: string, payload: unknown, options: TriggerOptions = {}, lineage: TriggerLineage = {}): Promise<TriggerResult> {
    let batcher = this.#batchers.get(env.id);
    if (!batcher) this.#batchers.set(env.id, (batcher = new MicroBatcher((requests) => this.#commit(requests), 200, "immediate", { maxInFlight: TRIGGERS_IN_FLIGHT })));
    const outcome = await batcher.add({ env, taskIdentifier, payload, options, lineage });
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  async #commit(requests: Request[]): Promise<Outcome[]> {
    if (requests.length > 1) {
      try {
        const results = await triggerRuns(this.#deps, requests[0]!.env, requests.map((r) => ({ taskIdentifier: r.taskIdentifier, payload: r.payload, options: r.options, lineage: r.lineage })));
        return results.map((result) => ({ ok: true, result }));
      } catch {
        // Fall through: each request on its own, with its own error.
      }
    }
    return Promise.all(
      requests.map((r) =>
        triggerRun(this.#deps, r.env, r.taskIdentifier, r.payload, r.options, r.lineage).then(
          (result): Outcome => ({ ok: true, result }),
          (error): Outcome => ({ ok: false, error }),
        ),
      ),
    );
  }
}
