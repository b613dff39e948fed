import {
  encodeOutput,
  notifyWaitersOfRun,
  transitionRun,
  withTransaction,
  type EngineDeps,
  type Queryable,
  type RunRow,
  type RunStatus,
} from "@svc/runtime/engine";
import type { SerializedError } from "./serialize-error.ts";

/** How an execution ended, decided by the executor. */
export type Ending =
  | { kind: "completed"; output: unknown }
  | { kind: "failed"; error: SerializedError }
  | { kind: "retry"; error: SerializedError; at: Date }
  | { kind: "timed_out"; error: SerializedError }
  | { kind: "crashed"; error: SerializedError };

const FINAL_STATUS: Record<Exclude<Ending["kind"], "retry">, RunStatus> = {
  completed: "COMPLETED",
  failed: "FAILED",
  timed_out: "TIMED_OUT",
  crashed: "CRASHED",
};

/**
 * Records how an execution ended, fenced by its claim token (a canceled or taken-over execution
 * writes nothing), and in the same transaction wakes a parent waiting on this run. Returns false
 * when the fence rejected the write.
 */
export async function finishExecution(deps: EngineDeps, run: RunRow, claimToken: string, ending: Ending): Promise<boolean> {
  const now = deps.clock.now();
  return withTransaction(deps.db, async (tx) => {
    const fence = { sql: "claim_token = $1", values: [claimToken] };
    if (ending.kind === "retry") {
      const result = await transitionRun(tx, run.id, "QUEUED", {
        from: ["EXECUTING"],
        set: { available_at: ending.at, error: JSON.stringify(ending.error), ledger_epoch: run.ledger_epoch + 1, claim_token: null, job_id: null, lease_expires_at: null },
        extraWhere: fence,
      });
      if (!result.changed) return false;
      await closeAttempt(tx, run, "FAILED", ending.error, ending.at, now);
      await tx.query(`SELECT pg_notify('svc_timers', '')`);
      return true;
    }
    const status = FINAL_STATUS[ending.kind];
    const packet = ending.kind === "completed" ? encodeOutput(ending.output) : null;
    const result = await transitionRun(tx, run.id, status, {
      from: ["EXECUTING"],
      set: {
        output: packet?.data ?? null,
        output_type: packet?.type ?? null,
        error: ending.kind === "completed" ? null : JSON.stringify(ending.error),
        finished_at: now,
        claim_token: null,
        lease_expires_at: null,
      },
      extraWhere: fence,
    });
    if (!result.changed) return false;
    await closeAttempt(tx, run, ending.kind === "completed" ? "COMPLETED" : ending.kind === "timed_out" ? "TIMED_OUT" : ending.kind === "crashed" ? "CRASHED" : "FAILED", ending.kind === "completed" ? null : ending.error, null, now);
    await notifyWaitersOfRun(deps, tx, result.run);
    return true;
  });
}

async function closeAttempt(tx: Queryable, run: RunRow, status: string, error: SerializedError | null, retryAt: Date | null, now: Date) {
  await tx.query(
    `UPDATE run_attempts SET status = $3, error = $4, retry_at = $5, finished_at = $6 WHERE run_id = $1 AND number = $2 AND status = 'EXECUTING'`,
    [run.id, run.attempt_number, status, error ? JSON.stringify(error) : null, retryAt, now],
  );
}

