import { flushWal, withTransaction, type Queryable } from "../../db/queryable.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";
import { ValidationError } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { deliverToWaits } from "./channel-waits.ts";
import { sseRecordJson, type RecordHeader, type SessionRecordRow } from "./records.ts";
import { ensureSessionRun } from "./session-runs.ts";
import { getSession, sessionStatus, type SessionRow } from "./store.ts";

export interface AppendInput {
  io: SessionChannel;
  /** The record's JSON value as text; null for a control record (see `headers`). */
  data: string | null;
  headers?: RecordHeader[];
  /** Makes the append idempotent: a part id the channel already has is not stored again. */
  partId?: string;
}

export interface AppendResult {
  seq: number;
  /** The part id was already on the channel: nothing was written. */
  duplicate: boolean;
  session: SessionRow;
}

/** A NOTIFY payload stays under Postgres's 8000 bytes; a record that does not fit is read by the listener. */
const MAX_NOTIFY_BYTES = 7900;

/**
 * The NOTIFY of an append, on CHANNELS.sessionRecords: JSON `{ e, k, io, seq, r? }`: the
 * environment, the session's stream key (externalId, else its id), the channel, the sequence
 * number and, when it fits, the record as the SSE stream carries it.
 */
export function recordNotice(session: Pick<SessionRow, "environment_id" | "external_id" | "id">, io: SessionChannel, row: SessionRecordRow): string {
  const head = `{"e":${JSON.stringify(session.environment_id)},"k":${JSON.stringify(streamKey(session))},"io":"${io}","seq":${row.seq}`;
  const record = sseRecordJson(row);
  const full = `${head},"r":${record}}`;
  return Buffer.byteLength(full) <= MAX_NOTIFY_BYTES ? full : `${head}}`;
}

/** The key a session's channels are known by to subscribers: its externalId when it has one, else its id. */
export function streamKey(session: Pick<SessionRow, "external_id" | "id">): string {
  return session.external_id ?? session.id;
}

/**
 * Appends one record to a session's channel in `tx`: the session row's lock orders appends (each
 * takes the next sequence number), the record is stored, and a NOTIFY tells every API process's
 * subscribers at commit. An `.in` record also goes to every run waiting on `.in`, and starts a run
 * when the session has none alive. Closed or expired sessions refuse (ValidationError, 400).
 */
export async function appendRecordInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  ref: string,
  input: AppendInput,
): Promise<AppendResult> {
  const now = deps.clock.now();
  const session = await getSession(tx, env.id, ref, "FOR UPDATE");
  if (sessionStatus(session, now) !== "ACTIVE") throw new ValidationError(`Cannot append to a ${sessionStatus(session, now) === "CLOSED" ? "closed" : "expired"} session`);
  if (input.partId !== undefined) {
    const { rows } = await tx.query<{ seq: string }>(`SELECT seq FROM session_records WHERE session_id = $1 AND io = $2 AND part_id = $3`, [session.id, input.io, input.partId]);
    if (rows[0]) return { seq: Number(rows[0].seq), duplicate: true, session };
  }
  const column = input.io === "in" ? "in_seq" : "out_seq";
  const { rows: seqRows } = await tx.query<{ seq: string }>(`UPDATE sessions SET ${column} = ${column} + 1 WHERE id = $1 RETURNING ${column} AS seq`, [session.id]);
  const record: SessionRecordRow = {
    seq: seqRows[0]!.seq,
    part_id: input.partId ?? randomId(),
    data: input.data,
    headers: input.headers && input.headers.length > 0 ? input.headers : null,
    created_at: now,
  };
  await tx.query(
    `INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [session.id, input.io, record.seq, record.part_id, record.data, record.headers === null ? null : JSON.stringify(record.headers), now],
  );
  if (input.io === "in") {
    const delivered = await deliverToWaits(deps, tx, session.id, "in", record);
    if (delivered > 0) await tx.query(`UPDATE sessions SET in_delivered = greatest(in_delivered, $2) WHERE id = $1`, [session.id, record.seq]);
    await ensureSessionRun(deps, tx, env, session, "append");
  }
  await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.sessionRecords, recordNotice(session, input.io, record)]);
  return { seq: Number(record.seq), duplicate: false, session };
}

/**
 * Appends one record in its own transaction. It commits without waiting for the WAL flush, so
 * subscribers and resumed runs see it at once; this returns only once it is durable (flushWal).
 */
export async function appendRecord(deps: EngineDeps, env: Environment, ref: string, input: AppendInput): Promise<AppendResult> {
  const result = await withTransaction(deps.db, (tx) => appendRecordInTransaction(deps, tx, env, ref, input), { asyncCommit: true });
  if (!result.duplicate) await flushWal(deps.db);
  return result;
}
