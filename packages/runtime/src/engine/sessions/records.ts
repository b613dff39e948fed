import type { Queryable } from "../../db/queryable.ts";
import type { SessionChannel } from "../../contracts/sessions.ts";

export type RecordHeader = [string, string];

export interface SessionRecordRow {
  seq: string;
  part_id: string;
  /** The record's JSON value as text; null for a control record. */
  data: string | null;
  headers: RecordHeader[] | null;
  created_at: Date;
}

/** The header that marks a control record (`turn-complete`, `upgrade-required`): its body is empty. */
export const CONTROL_HEADER = "trigger-control";

/** Most records one read returns; a reader asks again after the last one it got. */
export const MAX_RECORDS_PER_READ = 1000;

/**
 * A record as the SSE stream carries it (S2's shape, which the SDK parses): `body` is the JSON
 * text `{"data":…,"id":"<part id>"}`, or empty for a control record. Built as text: a 1 MiB record
 * is copied, never parsed.
 */
export function sseRecordJson(row: SessionRecordRow): string {
  const body = row.data === null ? "" : `{"data":${row.data},"id":${JSON.stringify(row.part_id)}}`;
  return `{"seq_num":${row.seq},"timestamp":${row.created_at.getTime()},"headers":${JSON.stringify(row.headers ?? [])},"body":${JSON.stringify(body)}}`;
}

/** A record as the drain (`GET …/records`) returns it. */
export function drainRecordJson(row: SessionRecordRow): string {
  const headers = row.headers && row.headers.length > 0 ? `,"headers":${JSON.stringify(row.headers)}` : "";
  return `{"data":${row.data ?? "null"},"id":${JSON.stringify(row.part_id)},"seqNum":${row.seq}${headers}}`;
}

/** What a run's channel wait returns: the record's sequence number, part id and value. */
export function waitOutputJson(row: Pick<SessionRecordRow, "seq" | "part_id" | "data" | "headers">): string {
  const headers = row.headers && row.headers.length > 0 ? `,"headers":${JSON.stringify(row.headers)}` : "";
  return `{"seq":${row.seq},"id":${JSON.stringify(row.part_id)},"data":${row.data ?? "null"}${headers}}`;
}

/** Records of one channel after `afterSeq`, oldest first, at most `limit`. */
export async function readRecords(
  db: Queryable,
  sessionId: string,
  io: SessionChannel,
  afterSeq: bigint | number | string,
  limit = MAX_RECORDS_PER_READ,
): Promise<SessionRecordRow[]> {
  const { rows } = await db.query<SessionRecordRow>(
    `SELECT seq, part_id, data, headers, created_at FROM session_records
     WHERE session_id = $1 AND io = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
    [sessionId, io, String(afterSeq), limit],
  );
  return rows;
}

/** The last record of a channel, or null. */
export async function lastRecord(db: Queryable, sessionId: string, io: SessionChannel): Promise<SessionRecordRow | null> {
  const { rows } = await db.query<SessionRecordRow>(
    `SELECT seq, part_id, data, headers, created_at FROM session_records WHERE session_id = $1 AND io = $2 ORDER BY seq DESC LIMIT 1`,
    [sessionId, io],
  );
  return rows[0] ?? null;
}

/** A record as a page shows it: its text cut to a preview. */
export interface SessionRecordPreviewRow extends SessionRecordRow {
  /** Bytes of the whole `data` text (null for a control record). */
  data_bytes: number | null;
  /** Whether `data` holds only the first characters of the record's text. */
  data_cut: boolean | null;
}

/**
 * The last `limit` records of a channel, oldest first, each record's text cut to `maxChars` in
 * the database: a page of the latest records stays small even when each record is 1 MiB. Only the
 * preview is read out of a long value (left() reads a slice; octet_length reads the size header).
 */
export async function readLastRecordPreviews(db: Queryable, sessionId: string, io: SessionChannel, limit: number, maxChars: number): Promise<SessionRecordPreviewRow[]> {
  const { rows } = await db.query<SessionRecordPreviewRow>(
    `SELECT seq, part_id, data, octet_length(whole) AS data_bytes, octet_length(whole) > octet_length(data) AS data_cut, headers, created_at
     FROM (SELECT seq, part_id, left(data, $4) AS data, data AS whole, headers, created_at FROM session_records
           WHERE session_id = $1 AND io = $2 ORDER BY seq DESC LIMIT $3) AS latest
     ORDER BY seq`,
    [sessionId, io, limit, maxChars],
  );
  return rows;
}

/** Whether a record is a control record with this subtype. */
export function isControl(row: Pick<SessionRecordRow, "headers" | "data">, subtype: string): boolean {
  return row.data === null && (row.headers ?? []).some(([name, value]) => name === CONTROL_HEADER && value === subtype);
}

/**
 * Drops a session's `.out` records below `below` (never past its last record): how a long
 * conversation keeps `.out` bounded. Monotonic and idempotent: trimming again, or lower, changes nothing.
 */
export async function trimOut(db: Queryable, environmentId: string, sessionRef: string, below: number): Promise<void> {
  await db.query(
    `WITH s AS (
       UPDATE sessions SET out_trimmed_below = greatest(out_trimmed_below, least($3::bigint, out_seq + 1))
       WHERE environment_id = $1 AND (id = $2 OR external_id = $2) RETURNING id, out_trimmed_below)
     DELETE FROM session_records r USING s WHERE r.session_id = s.id AND r.io = 'out' AND r.seq < s.out_trimmed_below`,
    [environmentId, sessionRef, below],
  );
}
