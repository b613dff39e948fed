/**
 * A bulk action's statuses (Trigger.dev's): PENDING while chunks are left, then COMPLETED (every
 * run of its set handled) or ABORTED (stopped by a request before that; the runs handled so far
 * stay handled). Both ends are final.
 */
export const BULK_ACTION_STATUSES = ["PENDING", "COMPLETED", "ABORTED"] as const;
export type BulkActionStatus = (typeof BULK_ACTION_STATUSES)[number];

/** What a bulk action does to each run of its set. */
export const BULK_ACTION_TYPES = ["CANCEL", "REPLAY"] as const;
export type BulkActionType = (typeof BULK_ACTION_TYPES)[number];

export function isFinalBulkActionStatus(status: BulkActionStatus): boolean {
  return status !== "PENDING";
}
