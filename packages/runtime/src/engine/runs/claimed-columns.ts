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
/**
 * The run's ledger_version (migration 0027) as of the statement's snapshot, the one its ledger
 * was read in: `claimed` is the row as updated, which may already count a completion that
 * committed after the snapshot (its resolution is then missing from the entries read).
 */
const CLAIMED_LEDGER_VERSION = `(SELECT s.ledger_version FROM runs s WHERE s.id = claimed.id)`;
/** The ledger of the claimed run, and its version (`ledger`, `ledger_version`). */
export const LEDGER_OF_CLAIMED = `${CLAIMED_LEDGER} AS ledger, ${CLAIMED_LEDGER_VERSION} AS ledger_version`;
/**
 * A first attempt has no ledger yet (only the run's own executions write one): no lookup. Its
 * version is 0: nothing raises it before an execution suspends the run or one of its entries resolves.
 */
export const LEDGER_OF_CLAIMED_START = `CASE WHEN claimed.attempt_number > 1 OR claimed.ledger_epoch > 0 THEN ${CLAIMED_LEDGER} END AS ledger,
  CASE WHEN claimed.attempt_number > 1 OR claimed.ledger_epoch > 0 THEN ${CLAIMED_LEDGER_VERSION} ELSE 0 END AS ledger_version`;
