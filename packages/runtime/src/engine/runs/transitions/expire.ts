import type { Queryable } from "../../../db/queryable.ts";
import { statusGuard, transition } from "../statuses.ts";
import type { RunRow } from "../store.ts";

/** A run not started before its TTL becomes EXPIRED. */
export const EXPIRE = transition(["QUEUED", "DELAYED"], "EXPIRED");

const SQL = `WITH due AS (
           SELECT id, status FROM runs WHERE expire_at <= $1 ORDER BY expire_at LIMIT $2 FOR UPDATE SKIP LOCKED),
         expired AS (
           UPDATE runs r SET status = '${EXPIRE.to}', expired_at = $1, finished_at = $1, expire_at = NULL, updated_at = $1
           FROM due WHERE r.id = due.id AND ${statusGuard("due.status", EXPIRE)} RETURNING r.*),
         cleared AS (
           UPDATE runs r SET expire_at = NULL FROM due WHERE r.id = due.id AND ${statusGuard("due.status", EXPIRE, true)} RETURNING r.id)
         SELECT (SELECT count(*) FROM expired)::int + (SELECT count(*) FROM cleared)::int AS handled,
           (SELECT count(*) FROM expired)::int AS expired,
           (SELECT json_agg(expired) FROM expired WHERE trigger_function IN ('triggerAndWait', 'batchTriggerAndWait') OR expired.awaited) AS awaited`;

/**
 * Expires up to `limit` runs whose `expire_at` passed at `now`; a due `expire_at` of a run that
 * left the queue another way is cleared. Returns how many were handled, how many of them expired,
 * and the expired runs someone awaits (json_agg: dates arrive as strings).
 */
export async function expireDue(tx: Queryable, now: Date, limit: number): Promise<{ handled: number; expired: number; awaited: RunRow[] }> {
  const { rows } = await tx.query<{ handled: number; expired: number; awaited: RunRow[] | null }>(SQL, [now, limit]);
  return { handled: rows[0]?.handled ?? 0, expired: rows[0]?.expired ?? 0, awaited: rows[0]?.awaited ?? [] };
}
