import type { Queryable } from "../../db/queryable.ts";
import { MAX_RATE_PERIOD_MS } from "../../durations.ts";

/**
 * Deletes up to `limit` rate-limit logs of the environment (rate_limit_windows, one row per queue,
 * rate key and period, migrations 0047 and 0055) whose newest start is older than both the cutoff and the longest
 * period a rate limit may have: such a log counts nothing any more, for any limit. A claim that
 * starts a run of that key meanwhile writes a new row (its INSERT waits for this DELETE's row lock,
 * then finds no row). Keys used once and never again would otherwise stay forever.
 */
export async function deleteRateWindowBatch(db: Queryable, environmentId: string, cutoff: Date, now: Date, limit: number): Promise<number> {
  const before = new Date(Math.min(cutoff.getTime(), now.getTime() - MAX_RATE_PERIOD_MS));
  const { rowCount } = await db.query(
    `DELETE FROM rate_limit_windows w USING (
       SELECT queue_name, rate_key, period_ms FROM rate_limit_windows
       WHERE environment_id = $1 AND started_at[cardinality(started_at)] < $2
       LIMIT $3) d
     WHERE w.environment_id = $1 AND w.queue_name = d.queue_name AND w.rate_key = d.rate_key AND w.period_ms = d.period_ms AND w.started_at[cardinality(w.started_at)] < $2`,
    [environmentId, before, limit],
  );
  return rowCount ?? 0;
}
