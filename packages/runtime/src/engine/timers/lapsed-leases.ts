import { withTransaction } from "../../db/queryable.ts";
import type { RunRow } from "../runs/store.ts";
import { dispatchStarts, type DueWork } from "./fire-due.ts";

/**
 * Executions that came through the resume fast path hold a lease instead of a pg-boss job. A run
 * whose lease lapsed lost its worker (kill -9, a crash): it goes back to QUEUED and is started
 * again — a new attempt that replays the same ledger, so nothing recorded is lost.
 */
export const lapsedLeases: DueWork = {
  name: "lapsed-leases",
  async fire(deps, now, limit) {
    return withTransaction(deps.db, async (tx) => {
      const { rows } = await tx.query<RunRow>(
        `UPDATE runs SET status = 'QUEUED', claim_token = NULL, lease_expires_at = NULL, worker_id = NULL, updated_at = now()
         WHERE id IN (SELECT id FROM runs WHERE status = 'EXECUTING' AND job_id IS NULL AND lease_expires_at <= $1
                      ORDER BY lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
           AND status = 'EXECUTING'
         RETURNING *`,
        [now, limit],
      );
      await dispatchStarts(deps, tx, rows);
      return rows.length;
    });
  },
  async nextDue(db) {
    const { rows } = await db.query<{ at: Date | null }>(`SELECT min(lease_expires_at) AS at FROM runs WHERE lease_expires_at IS NOT NULL AND status = 'EXECUTING' AND job_id IS NULL`);
    return rows[0]?.at ?? null;
  },
};
