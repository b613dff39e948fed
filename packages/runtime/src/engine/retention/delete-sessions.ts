import type { Queryable } from "../../db/queryable.ts";
import { FINAL_STATUSES } from "../runs/statuses.ts";
import { keysetTimeSql, type Keyset } from "./keyset.ts";

/**
 * A session that ended before the cutoff: closed then, or expired then (neither can be undone),
 * and whose current run has finished (or is gone). For `sessions s`; $2 is the cutoff, $3 the
 * final statuses. An ACTIVE session is never deleted, nor are its records (they are the
 * conversation: a run the session starts reads `.in` from where the last one stopped, a client
 * reads `.out` from any sequence number it has); only `trimTo` trims `.out`.
 */
const ENDED_BEFORE_CUTOFF = `(s.closed_at < $2 OR (s.closed_at IS NULL AND s.expires_at < $2))
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = s.current_run_id AND r.status <> ALL($3::text[]))`;

export interface EndedSessionsInput {
  environmentId: string;
  cutoff: Date;
  after: Keyset;
  limit: number;
}

/**
 * The next `limit` sessions of the environment created before the cutoff (sessions_list, in
 * creation order: a session that ended before the cutoff was created before it), and which of
 * them ended before it.
 */
export async function findEndedSessions(db: Queryable, input: EndedSessionsInput): Promise<{ examined: number; ended: string[]; next: Keyset | null }> {
  const { rows } = await db.query<{ id: string; at: string; ended: boolean }>(
    `SELECT s.id, ${keysetTimeSql("s.created_at")} AS at, (${ENDED_BEFORE_CUTOFF}) AS ended
       FROM sessions s
      WHERE s.environment_id = $1 AND s.created_at < $2 AND (s.created_at, s.id) > ($4::timestamptz, $5::text)
      ORDER BY s.created_at, s.id LIMIT $6`,
    [input.environmentId, input.cutoff, FINAL_STATUSES, input.after.at, input.after.id, input.limit],
  );
  const last = rows.at(-1);
  return {
    examined: rows.length,
    ended: rows.filter((r) => r.ended).map((r) => r.id),
    next: rows.length === input.limit && last ? { at: last.at, id: last.id } : null,
  };
}

/** Deletes up to `limit` records of an ended session (a session may hold millions: not in one statement). */
export async function deleteSessionRecordBatch(db: Queryable, sessionId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM session_records WHERE (session_id, io, seq) IN (
       SELECT session_id, io, seq FROM session_records WHERE session_id = $1 LIMIT $2)`,
    [sessionId, limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes an ended session (guarded: still ended before the cutoff) with what is left of it:
 * its session_runs rows and waits (cascade); its runs are deleted by the runs sweep, by their
 * own age.
 */
export async function deleteEndedSession(db: Queryable, sessionId: string, cutoff: Date): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM sessions s WHERE s.id = $1 AND ${ENDED_BEFORE_CUTOFF}`, [sessionId, cutoff, FINAL_STATUSES]);
  return (rowCount ?? 0) > 0;
}
