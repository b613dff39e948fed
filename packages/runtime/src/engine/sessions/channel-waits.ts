import type { Queryable } from "../../db/queryable.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint } from "../waitpoints/complete-waitpoint.ts";
import { newId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import { insertWaitpoint } from "../waitpoints/store.ts";
import { readRecords, waitOutputJson, type SessionRecordRow } from "./records.ts";
import { getSession, sessionStatus, type SessionRow } from "./store.ts";

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

export interface ChannelWaitInput {
  runId: string;
  environmentId: string;
  /** The session's id or externalId. */
  sessionRef: string;
  io: SessionChannel;
  /** Wait for the first record after this sequence number; null: after the run's starting point. */
  afterSeq: number | null;
  /** When the wait gives up (a TIMED_OUT waitpoint); null: never (or the session's expiry). */
  timeoutAt: Date | null;
}

/**
 * Makes the SESSION waitpoint of a run's channel wait in `tx`, under the session row's lock so
 * that no append slips between the look for a record and the wait. When a record after the cursor
 * is already there, the waitpoint is made COMPLETED with it (the run does not suspend); when the
 * session is closed, COMPLETED with SESSION_CLOSED_ERROR; else WAITING, for the next append to
 * complete. The cursor of a run's first wait is where the session started it (`session_runs`), or,
 * for a run the session did not start, after the last record a run was handed. A wait times out at
 * `timeoutAt`, or when the session expires, whichever is first.
 */
export async function makeChannelWaitpoint(deps: Pick<EngineDeps, "clock">, tx: Queryable, input: ChannelWaitInput): Promise<string> {
  const now = deps.clock.now();
  const session = await getSession(tx, input.environmentId, input.sessionRef, "FOR UPDATE");
  const afterSeq = input.afterSeq ?? (await startingPoint(tx, session, input.runId));
  const id = newId.waitpoint();
  const status = sessionStatus(session, now);
  if (status === "CLOSED") {
    await insertFinishedWaitpoint(tx, id, input.environmentId, now, JSON.stringify(SESSION_CLOSED_ERROR), true);
    return id;
  }
  const [record] = await readRecords(tx, session.id, input.io, afterSeq, 1);
  if (record) {
    await insertFinishedWaitpoint(tx, id, input.environmentId, now, waitOutputJson(record), false);
    if (input.io === "in") await tx.query(`UPDATE sessions SET in_delivered = greatest(in_delivered, $2) WHERE id = $1`, [session.id, record.seq]);
    return id;
  }
  const expiry = session.expires_at;
  const timeoutAt = expiry !== null && (input.timeoutAt === null || expiry < input.timeoutAt) ? expiry : input.timeoutAt;
  await insertWaitpoint(tx, { id, environmentId: input.environmentId, type: "SESSION", timeoutAt, createdAt: now });
  await tx.query(`INSERT INTO session_waits (waitpoint_id, session_id, io, after_seq) VALUES ($1, $2, $3, $4)`, [id, session.id, input.io, afterSeq]);
  if (timeoutAt !== null) await tx.query(`SELECT pg_notify($1, '')`, [CHANNELS.timers]);
  return id;
}

async function startingPoint(tx: Queryable, session: SessionRow, runId: string): Promise<string> {
  const { rows } = await tx.query<{ start_after: string }>(`SELECT start_after FROM session_runs WHERE session_id = $1 AND run_id = $2`, [session.id, runId]);
  return rows[0]?.start_after ?? session.in_delivered;
}

async function insertFinishedWaitpoint(tx: Queryable, id: string, environmentId: string, now: Date, output: string, isError: boolean): Promise<void> {
  await tx.query(
    `INSERT INTO waitpoints (id, environment_id, type, status, completed_at, output, output_type, output_is_error, created_at)
     VALUES ($1, $2, 'SESSION', 'COMPLETED', $3, $4, $5, $6, $3)`,
    [id, environmentId, now, output, CHANNEL_WAIT_OUTPUT_TYPE, isError],
  );
}

/**
 * The first record of a channel after a run's cursor (null: after its starting point), if there is
 * one; without waiting and without handing it over (a later wait still returns it).
 */
export async function peekChannelRecord(
  tx: Queryable,
  input: { runId: string; environmentId: string; sessionRef: string; io: SessionChannel; afterSeq: number | null },
): Promise<SessionRecordRow | null> {
  const session = await getSession(tx, input.environmentId, input.sessionRef);
  const afterSeq = input.afterSeq ?? (await startingPoint(tx, session, input.runId));
  const [record] = await readRecords(tx, session.id, input.io, afterSeq, 1);
  return record ?? null;
}
