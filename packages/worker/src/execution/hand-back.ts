import { CHANNELS, LIMITED_QUEUE_TEST, transitionRun, withTransaction, type EngineDeps } from "@svc/runtime/engine";
import type { Claim } from "./claim.ts";

/** How long a handed-back run waits before it is offered through pg-boss again. */
export const HAND_BACK_DELAY_MS = 5000;

/**
 * Gives back a run this worker claimed but cannot execute (it lacks the run's task: a queue
 * shared by tasks of several workers, or a resume, whose queue is the environment's). Undone as
 * if never claimed, fenced by the claim token:
 * - a start goes back to QUEUED with its attempt number, TTL (`expire_at`) and start time as
 *   they were, offered again through pg-boss after HAND_BACK_DELAY_MS;
 * - a resume stays a resume: the run waits again (WAITING, same attempt) with its resume due, and
 *   a NOTIFY offers it at once to the workers that have its task (their fast path only takes
 *   runs of their own tasks); if none takes it, the timer loop hands it to pg-boss when due. A run
 *   of a queue with a concurrencyLimit is not offered by NOTIFY: it resumes through its queue, to
 *   take a slot (as svc_complete_waitpoint decides).
 * Returns whether the run was handed back (false: canceled or taken over meanwhile).
 */
export async function handBack(deps: Pick<EngineDeps, "db" | "clock">, claim: Claim, claimToken: string, kind: "start" | "resume"): Promise<boolean> {
  const { run } = claim;
  const now = deps.clock.now();
  const later = new Date(now.getTime() + HAND_BACK_DELAY_MS);
  const fence = { sql: "claim_token = $1", values: [claimToken] };
  const cleared = { claim_token: null, job_id: null, lease_expires_at: null, offered_at: null, offered_start: false };
  if (kind === "start") {
    const { changed } = await transitionRun(deps.db, run.id, "QUEUED", now, {
      from: ["EXECUTING"],
      set: {
        ...cleared,
        attempt_number: Math.max(0, run.attempt_number - 1),
        available_at: later,
        expire_at: claim.beforeStart?.expireAt ?? null,
        started_at: claim.beforeStart?.startedAt ?? null,
      },
      extraWhere: fence,
    });
    return changed;
  }
  return withTransaction(deps.db, async (tx) => {
    const { changed } = await transitionRun(tx, run.id, "WAITING", now, { from: ["EXECUTING"], set: { ...cleared, resume_due_at: later }, extraWhere: fence });
    // The payload's middle field names a waitpoint for completions; a hand-back has none.
    if (changed) {
      await tx.query(`SELECT pg_notify($1, $2) FROM runs r WHERE r.id = $3 AND NOT ${LIMITED_QUEUE_TEST}`, [
        CHANNELS.resume,
        `${run.environment_id} - ${run.id}`,
        run.id,
      ]);
    }
    return changed;
  });
}
