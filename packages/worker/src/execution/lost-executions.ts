import type { Queryable } from "@svc/runtime/engine";
import type { ActiveExecutions } from "./active-executions.ts";

/**
 * Of the executions this process is running, the ones that lost their run: it was canceled, or
 * another execution took it over (a lapsed lease). Cancel reaches a worker through a NOTIFY; this
 * is the backstop for one that never arrives (the listener was reconnecting, or the cancel landed
 * between the claim and the execution's registration), so that the task's AbortSignal still fires,
 * and for an execution that stalled while the same worker took its run over.
 */
export async function lostExecutions(db: Queryable, active: ActiveExecutions): Promise<{ claimToken: string; reason: "canceled" | "taken over" }[]> {
  if (active.size === 0) return [];
  const input = active.all().map((e) => ({ run_id: e.runId, claim_token: e.claimToken }));
  const { rows } = await db.query<{ claim_token: string; status: string }>(
    // Each execution's run found by its primary key (svc_input_rows: planned as one row).
    `SELECT i.claim_token, r.status FROM svc_input_rows($1::json) e CROSS JOIN LATERAL json_to_record(e) AS i(run_id text, claim_token text)
     JOIN runs r ON r.id = i.run_id
     WHERE r.status = 'CANCELED' OR (r.status = 'EXECUTING' AND r.claim_token <> i.claim_token)`,
    [JSON.stringify(input)],
  );
  return rows.map((r) => ({ claimToken: r.claim_token, reason: r.status === "CANCELED" ? "canceled" : "taken over" }));
}

/** Aborts the executions that lost their run (see lostExecutions). */
export async function abortLostExecutions(db: Queryable, active: ActiveExecutions): Promise<void> {
  for (const { claimToken, reason } of await lostExecutions(db, active)) {
    active.abortExecution(claimToken, new Error(reason === "canceled" ? "run canceled" : "run taken over by another execution"));
  }
}
