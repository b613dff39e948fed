import type { WaitpointTokenDetail, WaitpointTokenItem } from "@svc/runtime/contracts";
import type { WaitpointRow } from "@svc/runtime/engine";

/**
 * A token as list items show it (the management API's waitpoint token item). Optional fields are left out rather than null (the
 * SDK's schema rejects null). The idempotency key appears only when the creator supplied one, and
 * still after it expired (then it lives in `inactive_idempotency_key`).
 */
export function presentTokenItem(row: Omit<WaitpointRow, "output">, url: string): WaitpointTokenItem {
  const item: WaitpointTokenItem = { id: row.id, url, status: row.status, tags: [...row.tags].sort(), createdAt: row.created_at.toISOString() };
  if (row.completed_at) item.completedAt = row.completed_at.toISOString();
  if (row.timeout_at) item.timeoutAt = row.timeout_at.toISOString();
  const key = row.idempotency_key ?? row.inactive_idempotency_key;
  if (row.idempotency_key_user_provided && key !== null) {
    item.idempotencyKey = key;
    if (row.idempotency_key_expires_at) item.idempotencyKeyExpiresAt = row.idempotency_key_expires_at.toISOString();
  }
  return item;
}

/**
 * A token as retrieve shows it: the item plus `output`, a serialized string the SDK parses by
 * `outputType`. A timed-out token carries the timeout error `{ message, code, name }` as its output
 * with `outputIsError: true`, from which the SDK builds a WaitpointTimeoutError.
 */
export function presentTokenDetail(row: WaitpointRow, url: string): WaitpointTokenDetail {
  const detail: WaitpointTokenDetail = { ...presentTokenItem(row, url), outputIsError: row.output_is_error || row.status === "TIMED_OUT" };
  let output = row.output;
  if (output === null && row.status === "TIMED_OUT") output = JSON.stringify(timeoutError(row.timeout_at ?? row.completed_at));
  if (output !== null) {
    detail.output = output;
    detail.outputType = row.output_type ?? "application/json";
  }
  return detail;
}

function timeoutError(at: Date | null) {
  return { name: "WaitpointTimeoutError", code: "WAITPOINT_TIMEOUT", message: `Waitpoint timed out at ${(at ?? new Date(0)).toISOString()}` };
}
