import type { Queryable } from "../../db/queryable.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint } from "../waitpoints/complete-waitpoint.ts";
import { waitOutputJson, type SessionRecordRow } from "./records.ts";

/** What a channel wait's output is stored as: JSON `{ seq, id, data, headers? }` (see waitOutputJson). */
export const CHANNEL_WAIT_OUTPUT_TYPE = "application/json";

/** The error a run's channel wait ends with when its session is closed while it waits. */
export const SESSION_CLOSED_ERROR = { name: "SessionClosedError", code: "SESSION_CLOSED", message: "The session was closed" };

/** The channel waits of a session still WAITING (and, with `beforeSeq`, reading before it). */
async function waitingOn(tx: Queryable, sessionId: string, io: SessionChannel, beforeSeq: string | null): Promise<string[]> {
  const { rows } = await tx.query<{ waitpoint_id: string }>(
    `SELECT sw.waitpoint_id FROM session_waits sw JOIN waitpoints w ON w.id = sw.waitpoint_id
     WHERE sw.session_id = $1 AND sw.io = $2 AND ($3::bigint IS NULL OR sw.after_seq < $3::bigint) AND w.status = 'WAITING'
     ORDER BY sw.waitpoint_id`,
    [sessionId, io, beforeSeq],
  );
  return rows.map((r) => r.waitpoint_id);
}

/**
 * Hands a record just appended to every run waiting on its channel: each wait completes with the
 * record as output (its runs resume if and only if `tx` commits). Returns how many waits it ended.
 * The caller holds the session row's lock, taken before the record got its sequence number, so
 * a wait registered before it is seen here and one registered after it finds the record itself.
 */
export async function deliverToWaits(deps: Pick<EngineDeps, "clock">, tx: Queryable, sessionId: string, io: SessionChannel, record: SessionRecordRow): Promise<number> {
  const waits = await waitingOn(tx, sessionId, io, record.seq);
  const output = waitOutputJson(record);
  for (const waitpointId of waits) {
    await completeWaitpoint(deps, tx, waitpointId, { ok: true, output, outputType: CHANNEL_WAIT_OUTPUT_TYPE }, { type: "SESSION" });
  }
  return waits.length;
}

/** Ends every wait on the session's channels with SESSION_CLOSED_ERROR (the session was closed). */
export async function endWaitsOfClosedSession(deps: Pick<EngineDeps, "clock">, tx: Queryable, sessionId: string): Promise<void> {
  for (const io of ["in", "out"] as const) {
    for (const waitpointId of await waitingOn(tx, sessionId, io, null)) {
      await completeWaitpoint(deps, tx, waitpointId, { ok: false, error: SESSION_CLOSED_ERROR }, { type: "SESSION", status: "COMPLETED" });
    }
  }
}
