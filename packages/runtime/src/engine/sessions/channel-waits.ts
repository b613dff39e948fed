import { prepared, type Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import type { EngineDeps } from "../deps.ts";
import { completeWaitpoint } from "../waitpoints/complete-waitpoint.ts";
import { newId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import { readRecords, type SessionRecordRow } from "./records.ts";
import { getSession, type SessionRow } from "./store.ts";

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
 * Makes the SESSION waitpoint of a run's channel wait in `tx`, in one statement
 * (`svc_make_channel_wait`), under the session row's lock so that no append slips between the
 * look for a record and the wait. When a record after the cursor is already there, the waitpoint
 * is made COMPLETED with it (the run does not suspend); when the session is closed, COMPLETED with
 * SESSION_CLOSED_ERROR; else WAITING, for the next append to complete. The cursor of a run's first
 * wait is where the session started it (`session_runs`), or, for a run the session did not start,
 * after the last record a run was handed. A wait times out at `timeoutAt`, or when the session
 * expires, whichever is first.
 */
export async function makeChannelWaitpoint(deps: Pick<EngineDeps, "clock">, tx: Queryable, input: ChannelWaitInput): Promise<string> {
  const id = newId.waitpoint();
  const { rows } = await tx.query<{ made: "not_found" | "closed" | "arrived" | "waiting" }>(
    prepared(
      "svc_make_channel_wait",
      `SELECT svc_make_channel_wait($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) AS made`,
      [
        id,
        input.environmentId,
        input.sessionRef,
        input.runId,
        input.io,
        input.afterSeq,
        input.timeoutAt,
        input.outAppended,
        deps.clock.now(),
        JSON.stringify(SESSION_CLOSED_ERROR),
        CHANNEL_WAIT_OUTPUT_TYPE,
        CHANNELS.timers,
      ],
    ),
  );
  if (rows[0]!.made === "not_found") throw new NotFoundError("Session not found");
  return id;
}

async function startingPoint(tx: Queryable, session: SessionRow, runId: string): Promise<string> {
  const { rows } = await tx.query<{ start_after: string }>(`SELECT start_after FROM session_runs WHERE session_id = $1 AND run_id = $2`, [session.id, runId]);
  return rows[0]?.start_after ?? session.in_delivered;
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
