import type { RunRow } from "./store.ts";
import { KEYED_EPOCH } from "../../ledger/entries.ts";

/**
 * The columns an execution uses: a claim returns only these (less to send, parse and collect),
 * and a resume offer (SEND_OFFERS, built from this list) carries the same.
 */
export const CLAIMED_COLUMNS = [
  "id", "environment_id", "task_identifier", "queue_name", "payload", "payload_type", "attempt_number", "ledger_epoch",
  "max_attempts", "max_duration_s", "tags", "is_test", "idempotency_key_user", "batch_id", "trigger_function",
  "created_at", "updated_at", "claim_token", "traceparent", "wait_traceparent",
] as const;
export type ClaimedRun = Pick<RunRow, (typeof CLAIMED_COLUMNS)[number]>;

/** The claimed columns of `runs r`, as a RETURNING / SELECT list. */
export const RETURN_CLAIMED = CLAIMED_COLUMNS.map((c) => `r.${c}`).join(", ");

/** The ledger entries a claimed run (the CTE `claimed`) replays: its epoch's and keyed ones. */
const CLAIMED_LEDGER = `(SELECT json_agg(l) FROM run_ledger l WHERE l.run_id = claimed.id AND l.epoch IN (claimed.ledger_epoch, ${KEYED_EPOCH}))`;
export const LEDGER_OF_CLAIMED = `${CLAIMED_LEDGER} AS ledger`;
/** A first attempt has no ledger yet (only the run's own executions write one): no lookup. */
export const LEDGER_OF_CLAIMED_START = `CASE WHEN claimed.attempt_number > 1 OR claimed.ledger_epoch > 0 THEN ${CLAIMED_LEDGER} END AS ledger`;
