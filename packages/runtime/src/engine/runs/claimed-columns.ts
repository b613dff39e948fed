import type { RunRow } from "./store.ts";

/**
 * The columns an execution uses: a claim returns only these (less to send, parse and collect),
 * and a resume offer (svc_complete_waitpoint, which is handed this list) carries the same.
 */
export const CLAIMED_COLUMNS = [
  "id", "environment_id", "task_identifier", "queue_name", "payload", "payload_type", "attempt_number", "ledger_epoch",
  "max_attempts", "max_duration_s", "tags", "is_test", "idempotency_key_user", "batch_id", "trigger_function",
  "created_at", "updated_at", "claim_token",
] as const;
export type ClaimedRun = Pick<RunRow, (typeof CLAIMED_COLUMNS)[number]>;
