import { flushWal, prepared, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, TooLargeError, UnprocessableError } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import { FINAL_STATUSES } from "../runs/statuses.ts";
import { RESUME_OFFERS_PARAMETER, SEND_OFFERS } from "../waitpoints/resume-offers.ts";

/** `out`: what a run sends to its subscribers (streams.pipe/append); `in`: what clients send to it (streams.input). */
export type StreamIo = "out" | "in";

/** Bytes of one chunk's JSON text at most. */
export const MAX_STREAM_CHUNK_BYTES = 1024 * 1024;
/** Chunks one stream holds at most: an append that would pass it is refused (413), nothing stored. */
export const MAX_STREAM_CHUNKS = 100_000;
/** Streams of each kind (`out`, `in`) one run has at most. */
export const MAX_STREAMS_PER_RUN = 50;
/** Most chunks one read returns; a reader asks again after the last one it got. */
export const MAX_CHUNKS_PER_READ = 1000;

export interface ChunkInput {
  /** The chunk's JSON text. */
  data: string;
  /** Makes the append idempotent: a part id the stream already has is not stored again. */
  partId?: string;
}

export interface StreamChunkRow {
  seq: string;
  part_id: string;
  data: string;
  created_at: Date;
}

/** What `svc_append_run_stream_records` needs besides the chunks: channels, caps, and how waits complete. */
const APPEND_CONTEXT = JSON.stringify({
  recordChannel: CHANNELS.runStreamRecords,
  inChannel: CHANNELS.runStreamIn,
  finalStatuses: FINAL_STATUSES,
  maxChunks: MAX_STREAM_CHUNKS,
  maxStreams: MAX_STREAMS_PER_RUN,
  resumeChannel: CHANNELS.resume,
  readyChannel: CHANNELS.runsReady,
  offers: JSON.parse(RESUME_OFFERS_PARAMETER),
});

type Appended = { error: "fenced" | "not_found" | "finished" | "full" | "too_many_streams" } | { seqs: (number | string)[]; duplicates: boolean[] };

/**
 * Appends chunks to one stream of a run in one statement, its own transaction
 * (`svc_append_run_stream_records`): under the stream row's lock each chunk takes the next
 * sequence number; a chunk whose part id the stream already has is acknowledged without being
 * stored again; each new one is announced to every API process's subscribers (NOTIFY on
 * CHANNELS.runStreamRecords). The first chunk of an `out` stream lists its key in the run's
 * `realtime_streams` (realtime run subscribers then subscribe to it). `in` chunks complete the
 * run's input waits on the stream (`streams.input().wait()`) and wake its `.once()`/`.on()`.
 *
 * Refused: an unknown run (NotFoundError), an `in` chunk for a finished run (422), a stream that
 * would pass MAX_STREAM_CHUNKS or a run past MAX_STREAMS_PER_RUN (413). A `writer` (the run's own
 * code) whose claim was lost gets null (the run is fenced).
 */
export async function appendStreamChunks(
  deps: Pick<EngineDeps, "clock" | "db">,
  environmentId: string,
  runId: string,
  io: StreamIo,
  key: string,
  inputs: ChunkInput[],
  writer?: { claimToken: string },
): Promise<{ seq: number; duplicate: boolean }[] | null> {
  const records = inputs.map((i) => ({ data: i.data, partId: i.partId ?? randomId() }));
  const { rows } = await deps.db.query<{ appended: Appended }>(
    prepared(
      "svc_append_run_stream_records",
      `SELECT c.result AS appended, offers.sent AS offers_sent, set_config('synchronous_commit', 'off', true) AS async_commit
       FROM svc_append_run_stream_records($1, $2, $3, $4, $5, $6, $7, $8) AS c, LATERAL ${SEND_OFFERS} AS offers`,
      [environmentId, runId, io, key, deps.clock.now(), JSON.stringify(records), writer ? JSON.stringify(writer) : null, APPEND_CONTEXT],
    ),
  );
  const appended = rows[0]!.appended;
  if ("error" in appended) {
    switch (appended.error) {
      case "fenced":
        return null;
      case "not_found":
        throw new NotFoundError("Run not found");
      case "finished":
        throw new UnprocessableError("Cannot send to an input stream of a finished run");
      case "full":
        throw new TooLargeError(`The stream "${key}" holds at most ${MAX_STREAM_CHUNKS} chunks`);
      case "too_many_streams":
        throw new TooLargeError(`A run has at most ${MAX_STREAMS_PER_RUN} ${io === "in" ? "input" : "realtime"} streams`);
    }
  }
  const results = (appended.seqs ?? []).map((seq, i) => ({ seq: Number(seq), duplicate: appended.duplicates[i]! }));
  // Committed without waiting for the WAL flush (subscribers see the chunks at once); durable before we answer.
  if (results.some((r) => !r.duplicate)) await flushWal(deps.db);
  return results;
}

/** Chunks of one stream after `afterSeq`, oldest first, at most `limit`. */
export async function readStreamChunks(
  db: Queryable,
  runId: string,
  io: StreamIo,
  key: string,
  afterSeq: bigint | number | string,
  limit = MAX_CHUNKS_PER_READ,
): Promise<StreamChunkRow[]> {
  const { rows } = await db.query<StreamChunkRow>(
    `SELECT seq, part_id, data, created_at FROM run_stream_records
     WHERE run_id = $1 AND io = $2 AND stream_key = $3 AND seq > $4 ORDER BY seq LIMIT $5`,
    [runId, io, key, String(afterSeq), limit],
  );
  return rows;
}

/** The last chunk's sequence number of a stream (0: none, or no such stream). */
export async function lastStreamSeq(db: Queryable, runId: string, io: StreamIo, key: string): Promise<number> {
  const { rows } = await db.query<{ last_seq: string }>(`SELECT last_seq FROM run_streams WHERE run_id = $1 AND io = $2 AND stream_key = $3`, [runId, io, key]);
  return Number(rows[0]?.last_seq ?? 0);
}

/**
 * A chunk as the SSE stream carries it (S2's shape, which the SDK parses, as session records):
 * `body` is the JSON text `{"data":…,"id":"<part id>"}`. Built as text: a large chunk is copied,
 * never parsed.
 */
export function streamRecordJson(row: StreamChunkRow): string {
  const body = `{"data":${row.data},"id":${JSON.stringify(row.part_id)}}`;
  return `{"seq_num":${row.seq},"timestamp":${row.created_at.getTime()},"headers":[],"body":${JSON.stringify(body)}}`;
}
