import type { Queryable } from "../../../db/queryable.ts";
import { statusGuard, transition } from "../statuses.ts";
import type { RunRow } from "../store.ts";

/** A DELAYED run whose delay passed becomes QUEUED. */
export const FIRE_DELAYED = transition(["DELAYED"], "QUEUED");

const SQL = `UPDATE runs SET status = '${FIRE_DELAYED.to}', delay_until = NULL, updated_at = $1
         WHERE id IN (SELECT id FROM runs WHERE delay_until <= $1 AND ${statusGuard("status", FIRE_DELAYED)}
                      ORDER BY delay_until LIMIT $2 FOR UPDATE SKIP LOCKED)
           AND ${statusGuard("status", FIRE_DELAYED)}
         RETURNING *`;

/** Queues up to `limit` runs whose delay passed at `now` (oldest first; skips locked rows). */
export async function fireDelayed(tx: Queryable, now: Date, limit: number): Promise<RunRow[]> {
  const { rows } = await tx.query<RunRow>(SQL, [now, limit]);
  return rows;
}
