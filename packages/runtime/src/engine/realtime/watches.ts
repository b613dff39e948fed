import { preparedText, type Queryable } from "../../db/queryable.ts";

// realtime_watches (migration 0038): the environments whose run changes NOTIFY svc_run_changes,
// one row per (environment, API process) holding subscribers there.

/**
 * Registers (or extends) `watcher`'s watch of an environment until `expiresAt`. Returns the
 * horizon: the next transaction id after the row committed. A writer that decided not to
 * NOTIFY because it did not see the row yet has a transaction id below it.
 */
export async function upsertWatch(db: Queryable, environmentId: string, watcher: string, expiresAt: Date): Promise<string> {
  await db.query(
    preparedText(
      `INSERT INTO realtime_watches (environment_id, watcher, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (environment_id, watcher) DO UPDATE SET expires_at = GREATEST(realtime_watches.expires_at, EXCLUDED.expires_at)`,
      [environmentId, watcher, expiresAt],
    ),
  );
  // A statement of its own, after the commit above (a pool query commits on its own).
  const { rows } = await db.query<{ horizon: string }>(preparedText(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS horizon`));
  return rows[0]!.horizon;
}

/** Extends `watcher`'s watches of these environments until `expiresAt`. */
export async function extendWatches(db: Queryable, watcher: string, environmentIds: string[], expiresAt: Date): Promise<void> {
  if (environmentIds.length === 0) return;
  await db.query(
    preparedText(`UPDATE realtime_watches SET expires_at = $3 WHERE watcher = $1 AND environment_id = ANY($2::text[]) AND expires_at < $3`, [watcher, environmentIds, expiresAt]),
  );
}

/** Ends `watcher`'s watches of these environments (all of them when `environmentIds` is null). */
export async function deleteWatches(db: Queryable, watcher: string, environmentIds: string[] | null): Promise<void> {
  if (environmentIds === null) await db.query(preparedText(`DELETE FROM realtime_watches WHERE watcher = $1`, [watcher]));
  else if (environmentIds.length > 0) await db.query(preparedText(`DELETE FROM realtime_watches WHERE watcher = $1 AND environment_id = ANY($2::text[])`, [watcher, environmentIds]));
}

/** Deletes every process's watches that expired before `now` (a process that died leaves its rows). */
export async function deleteExpiredWatches(db: Queryable, now: Date): Promise<number> {
  const { rowCount } = await db.query(preparedText(`DELETE FROM realtime_watches WHERE expires_at < $1`, [now]));
  return rowCount ?? 0;
}
