import type { RunRow } from "./store.ts";
import { KEYED_EPOCH } from "../../ledger/entries.ts";

/**
 * The columns an execution uses: a claim returns only these (less to send, parse and collect),
 * and a resume offer (SEND_OFFERS, built from this list) carries the same.
 */
export const CLAIMED_COLUMNS = [
  "id", "environment_id", "task_identifier", "queue_name", "payload", "payload_type", "attempt_number", "ledger_epoch",
  "max_attempts", "max_duration_s", "tags", "is_test", "idempotency_key_user", "idempotency_key_scope", "batch_id", "trigger_function",
  "created_at", "updated_at", "claim_token", "traceparent", "wait_traceparent",
  // What metadata.current() reads from the code's first line (ledger/run-metadata.ts).
  "metadata", "metadata_ops_epoch", "metadata_ops", "parent_run_id",
] as const;
export type ClaimedRun = Pick<RunRow, (typeof CLAIMED_COLUMNS)[number]>;

/** The claimed columns of `runs r`, as a RETURNING / SELECT list. */
export const RETURN_CLAIMED = CLAIMED_COLUMNS.map((c) => `r.${c}`).join(", ");

/**
 * The claimed runs of the CTE `claimed` with their ledgers (`ledger`: the entries of the run's
 * epoch and the keyed ones) and ledger_version, as a statement's final SELECT. They are read by
 * svc_claimed_ledger (sql/functions), in a snapshot taken after the claim locked the run, not in
 * the claim statement's own: a takeover claim that waited for the live execution it takes over
 * from must see the step that execution recorded meanwhile, or it runs the step again.
 * `load` is the SQL condition under which a run has a ledger to read.
 */
const claimedWithLedger = (load: string) =>
  `SELECT claimed.*, lr.ledger, lr.ledger_version FROM claimed CROSS JOIN LATERAL svc_claimed_ledger(claimed.id, claimed.ledger_epoch, ${KEYED_EPOCH}, ${load}) lr`;

export const SELECT_CLAIMED_WITH_LEDGER = claimedWithLedger("true");
/**
 * The runs a claim from `runs` took (claim-ready.ts), whose CTE `claimed` also returns
 * `previous_status`: a resume (WAITING before) replays its ledger; a start reads one only when it
 * is not its run's first attempt, as a first attempt has no ledger yet (only the run's own
 * executions write one). A first attempt's version is 0: nothing raises it before an execution
 * suspends the run or one of its entries resolves.
 */
export const SELECT_CLAIMED_READY_WITH_LEDGER = claimedWithLedger("claimed.previous_status = 'WAITING' OR claimed.attempt_number > 1 OR claimed.ledger_epoch > 0");
