import { withTransaction } from "../../db/queryable.ts";
import { dueAt } from "./due-times.ts";
import type { DueWork } from "./fire-due.ts";

/**
 * True, for a run aliased `r`, when the run's queue has a concurrencyLimit, as its workers
 * registered it: such runs take a slot of their queue to resume, like a start. The one definition
 * is the SQL function svc_queue_is_limited, which svc_complete_waitpoint uses too (a one-row set,
 * so that the planner inlines it: hence the subquery).
 */
export const LIMITED_QUEUE_TEST = `(SELECT q.limited FROM svc_queue_is_limited(r.environment_id, r.queue_name) q)`;

/**
 * Resumes that no worker took through the NOTIFY fast path by their `resume_due_at` (nobody was
 * listening, no worker had a free slot, the NOTIFY was lost with a connection), and resumes of
 * queues with a concurrencyLimit (due at once): each becomes a pg-boss resume job, in the same
 * transaction that clears the mark. A run that is no longer WAITING only has its mark cleared.
 */
export const dueResumes: DueWork = {
  name: "due-resumes",
  async fire(deps, now, limit) {
    return withTransaction(deps.db, async (tx) => {
      const { rows } = await tx.query<{ id: string; waiting: boolean; environment_id: string; queue_name: string; concurrency_key: string | null; limited: boolean }>(
        `WITH due AS (
           SELECT id, status FROM runs WHERE resume_due_at <= $1 ORDER BY resume_due_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         UPDATE runs r SET resume_due_at = NULL FROM due WHERE r.id = due.id
         RETURNING r.id, due.status = 'WAITING' AS waiting, r.environment_id, r.queue_name, r.concurrency_key,
           ${LIMITED_QUEUE_TEST} AS limited`,
        [now, limit],
      );
      const waiting = rows.filter((r) => r.waiting);
      if (waiting.length > 0) {
        await deps.dispatcher.dispatch(
          tx,
          waiting.map((r) => ({
            kind: "resume" as const,
            runId: r.id,
            environmentId: r.environment_id,
            queueName: r.queue_name,
            concurrencyKey: r.concurrency_key,
            throughQueue: r.limited,
          })),
          now,
        );
      }
      return rows.length;
    });
  },
  ...dueAt(`SELECT min(resume_due_at) AS at FROM runs WHERE resume_due_at IS NOT NULL`),
};
