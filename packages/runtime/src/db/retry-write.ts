import { retryOnConflict } from "./queryable.ts";
import { retryWhileUnavailable } from "./unavailable.ts";

/**
 * How an execution's own writes (claims, ledger records, endings) are run: again after a lock
 * conflict, and again while Postgres is unreachable (a restart), so that an outage delays the run
 * instead of costing it its attempt. Every such write is guarded by the claim token, so a try
 * whose commit landed before the connection was cut makes the next try change nothing.
 * (A withTransaction already runs again after a lock conflict: wrap it in retryWhileUnavailable.)
 */
export function retryWrite<T>(work: () => Promise<T>): Promise<T> {
  return retryWhileUnavailable(() => retryOnConflict(work));
}
