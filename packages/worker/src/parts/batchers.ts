import { MicroBatcher } from "@svc/runtime/engine";
import { retryWrite } from "@svc/runtime/db";
import { claimFastResumes } from "../execution/claim.ts";
import type { ExecutionBatchers } from "../execution/executor-deps.ts";
import { finishExecutions, type Finish } from "../execution/finish.ts";
import { declineOffers } from "../execution/offers.ts";
import type { WorkerResources } from "./resources.ts";

export interface WorkerBatchers extends ExecutionBatchers {
  /**
   * Offers this worker has no slot for, given back together (a completion can offer many at once):
   * true where the run was given back, false where the offer was withdrawn or canceled meanwhile.
   */
  declines: MicroBatcher<{ runId: string; claimToken: string }, boolean>;
}

/**
 * The worker's batched writes: what the calls of one event-loop turn share (one statement for
 * all). Like every statement over many runs, each can deadlock with another one (a cancel locking
 * a run tree, a completion offering many runs, lease renewals): run again (retryWrite).
 */
/** How many statements of endings a worker has under way at once (see MicroBatcher). */
export const FINISHES_IN_FLIGHT = 2;

export function createBatchers({ engine, claimPool, worker, config }: WorkerResources): WorkerBatchers {
  const { db, clock } = engine;
  const { id, version } = worker;
  return {
    // On the claim pool: these claims commit without waiting for the WAL flush.
    fastResumeClaims: new MicroBatcher(
      (items: { runId: string; claimToken: string }[]) =>
        retryWrite(() => claimFastResumes(claimPool, items, { id, version, tasks: worker.taskIds }, clock.now(), config.leaseMs)),
      500,
      "microtask",
    ),
    // Two endings' statements at most under way: under load, endings wait for one to commit and
    // go together (fewer, larger statements and commits); idle, one goes at once.
    finishes: new MicroBatcher((items: Finish[]) => retryWrite(() => finishExecutions(db, items, clock.now())), 500, "immediate", { maxInFlight: FINISHES_IN_FLIGHT }),
    declines: new MicroBatcher(async (items: { runId: string; claimToken: string }[]) => {
      const givenBack = await retryWrite(() => declineOffers(db, worker.environment.id, items, clock.now()));
      return items.map((i) => givenBack.has(i.runId));
    }),
  };
}
