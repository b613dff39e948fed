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

export interface RecordInput {
  /** The record's JSON value as text; null for a control record (see `headers`). */
  data: string | null;
  headers?: RecordHeader[];
  /** Makes the append idempotent: a part id the channel already has is not stored again. */
  partId?: string;
}

export interface AppendInput extends RecordInput {
  io: SessionChannel;
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
 * Appends records to one channel of a session in `tx`: the session row's lock orders appends
 * (each record takes the next sequence number), the records are stored in one statement, and a
 * NOTIFY per record tells every API process's subscribers at commit. A record whose part id the
 * channel already has is not stored again (its result is `duplicate`, with the stored sequence
 * number). `.in` records also go to every run waiting on `.in`, and start a run when the session
 * has none alive. Closed or expired sessions refuse (ValidationError, 400).
 */
export async function appendRecordsInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  ref: string,
  io: SessionChannel,
  inputs: RecordInput[],
  /** A run's appends: how many records its attempt epoch has appended to this session after these. */
  writer?: { runId: string; epoch: number; appended: number },
): Promise<{ session: SessionRow; results: { seq: number; duplicate: boolean }[] }> {
  const now = deps.clock.now();
  const session = await getSession(tx, env.id, ref, "FOR UPDATE");
  const partIds = inputs.map((i) => i.partId).filter((id): id is string => id !== undefined);
  const stored = new Map<string, number>();
  if (partIds.length > 0) {
    const { rows } = await tx.query<{ part_id: string; seq: string }>(
      `SELECT part_id, seq FROM session_records WHERE session_id = $1 AND io = $2 AND part_id = ANY($3::text[])`,
      [session.id, io, partIds],
    );
    for (const row of rows) stored.set(row.part_id, Number(row.seq));
  }
  const fresh = inputs.filter((i) => i.partId === undefined || !stored.has(i.partId));
  const results: { seq: number; duplicate: boolean }[] = [];
  // A part already stored is acknowledged whatever became of the session since (a replayed run
  // appends again what it appended before the session closed).
  if (fresh.length === 0) {
    return { session, results: inputs.map((i) => ({ seq: stored.get(i.partId!)!, duplicate: true })) };
  }
  const status = sessionStatus(session, now);
  if (status !== "ACTIVE") throw new ValidationError(`Cannot append to a ${status === "CLOSED" ? "closed" : "expired"} session`);
  const column = io === "in" ? "in_seq" : "out_seq";
  const { rows: seqRows } = await tx.query<{ seq: string }>(`UPDATE sessions SET ${column} = ${column} + $2 WHERE id = $1 RETURNING ${column} AS seq`, [session.id, fresh.length]);
  const firstSeq = Number(seqRows[0]!.seq) - fresh.length + 1;
  const records: SessionRecordRow[] = fresh.map((input, i) => ({
    seq: String(firstSeq + i),
    part_id: input.partId ?? randomId(),
    data: input.data,
    headers: input.headers && input.headers.length > 0 ? input.headers : null,
    created_at: now,
  }));
  await tx.query(
    `INSERT INTO session_records (session_id, io, seq, part_id, data, headers, created_at)
     SELECT $1, $2, r.seq, r.part_id, r.data, r.headers, $3
     FROM unnest($4::bigint[], $5::text[], $6::text[], $7::jsonb[]) AS r(seq, part_id, data, headers)`,
    [
      session.id,
      io,
      now,
      records.map((r) => r.seq),
      records.map((r) => r.part_id),
      records.map((r) => r.data),
      records.map((r) => (r.headers === null ? null : JSON.stringify(r.headers))),
    ],
  );
  if (io === "in") {
    let delivered = 0;
    for (const record of records) delivered += await deliverToWaits(deps, tx, session.id, "in", record);
    if (delivered > 0) await tx.query(`UPDATE sessions SET in_delivered = greatest(in_delivered, $2) WHERE id = $1`, [session.id, records[records.length - 1]!.seq]);
    await ensureSessionRun(deps, tx, env, session, "append");
  }
  if (writer) {
    await tx.query(
      `INSERT INTO session_writers (session_id, run_id, epoch, appended) VALUES ($1, $2, $3, $4)
       ON CONFLICT (run_id, epoch, session_id) DO UPDATE SET appended = greatest(session_writers.appended, excluded.appended)`,
      [session.id, writer.runId, writer.epoch, writer.appended],
    );
  }
  await tx.query(`SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n`, [CHANNELS.sessionRecords, records.map((r) => recordNotice(session, io, r))]);
  let next = 0;
  for (const input of inputs) {
    const known = input.partId === undefined ? undefined : stored.get(input.partId);
    results.push(known !== undefined ? { seq: known, duplicate: true } : { seq: Number(records[next++]!.seq), duplicate: false });
  }
  return { session, results };
}

/** Appends one record in `tx` (see appendRecordsInTransaction). */
export async function appendRecordInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  ref: string,
  input: AppendInput,
): Promise<AppendResult> {
  const { session, results } = await appendRecordsInTransaction(deps, tx, env, ref, input.io, [input]);
  return { ...results[0]!, session };
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

/** How many `.out` records a run's attempt epoch appended to a session (0 when none). */
export async function appendedByRun(db: Queryable, environmentId: string, sessionRef: string, runId: string, epoch: number): Promise<number> {
  const { rows } = await db.query<{ appended: number }>(
    `SELECT w.appended FROM session_writers w JOIN sessions s ON s.id = w.session_id
     WHERE w.run_id = $1 AND w.epoch = $2 AND s.environment_id = $3 AND (s.id = $4 OR s.external_id = $4)`,
    [runId, epoch, environmentId, sessionRef],
  );
  return rows[0]?.appended ?? 0;
}
