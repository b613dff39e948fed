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

/**
 * Ends every wait on the session's channels with SESSION_CLOSED_ERROR (the session was closed);
 * their rows leave session_waits.
 */
export async function endWaitsOfClosedSession(deps: Pick<EngineDeps, "clock">, tx: Queryable, sessionId: string): Promise<void> {
  const { rows } = await tx.query<{ waitpoint_id: string; out_appended: number | null }>(
    `DELETE FROM session_waits WHERE session_id = $1 RETURNING waitpoint_id, out_appended`,
    [sessionId],
  );
  rows.sort((a, b) => (a.waitpoint_id < b.waitpoint_id ? -1 : 1));
  for (const row of rows) {
    const outcome = { ok: false, error: SESSION_CLOSED_ERROR, ...(row.out_appended === null ? {} : { outAppended: row.out_appended }) };
    await completeWaitpoint(deps, tx, row.waitpoint_id, outcome, { type: "SESSION", status: "COMPLETED" });
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
  /** How many `.out` records the run's attempt has appended to the session so far (see session_waits.out_appended). */
  outAppended: number;
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
  await tx.query(`INSERT INTO session_waits (waitpoint_id, session_id, io, after_seq, out_appended) VALUES ($1, $2, $3, $4, $5)`, [
    id,
    session.id,
    input.io,
    afterSeq,
    input.outAppended,
  ]);
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
