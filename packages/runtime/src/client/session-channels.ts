// A session's two channels, `.in` and `.out`, over HTTP: append a record, read the records after a
// cursor at once, or subscribe to them as they land (SSE, reconnecting with Last-Event-ID).
import { nanoid } from "nanoid";
import { AppendRecordResponse, SessionRecordsResponse, type SessionChannel } from "../contracts/sessions.ts";
import { ApiConnectionError, ApiError, ApiResponseError } from "./errors.ts";
import { readServerSentEvents } from "./event-stream.ts";
import { segment, type HttpTransport } from "./http.ts";
import { decideRetry, type AttemptOutcome } from "./retry.ts";
import { validateResponse } from "./validate-response.ts";

export type { SessionChannel };

/** A record header, `[name, value]`. */
export type SessionRecordHeader = [name: string, value: string];

/**
 * One record of a channel.
 *
 * `data` is the value as stored. A record appended over HTTP (`sessions.append`) is stored as the
 * JSON string of the body it was sent with, so its `data` is that string: use `parseRecordData`
 * to read back a value that was appended as JSON. A control record has `data: null` and says
 * what it is in `headers` (see `controlSubtype`).
 */
export interface SessionRecord {
  /** The record's sequence number on its channel (1, 2, …): the cursor to resume after. */
  seq: number;
  /**
   * The record's part id (`X-Part-Id`, or one the server made). The event stream does not carry
   * it for control records: those come from `subscribe` with `id: ""`.
   */
  id: string;
  data: unknown;
  /** Present when the record has headers, e.g. `[["trigger-control", "turn-complete"]]`. */
  headers?: SessionRecordHeader[];
}

export interface AppendRecordOptions {
  /**
   * Makes the append idempotent: a part id the channel already has is not stored again (the
   * answer carries the stored record's `seq`). 1–128 printable ASCII characters.
   * @default a new nanoid per call, reused by that call's retries
   */
  partId?: string;
}

export interface AppendedRecord {
  seq: number;
  /** The part id the record was appended with. */
  id: string;
}

export interface ReadRecordsOptions {
  /** Only records after this sequence number. @default from the first record */
  afterEventId?: number | string;
}

export interface SubscribeOptions {
  /** Only records after this sequence number (the SSE Last-Event-ID). @default from the first record */
  lastEventId?: number | string;
  /**
   * How long the server holds each connection open (1–600 s) before ending it; the subscription
   * then reconnects after the last record it got. @default the server's (60)
   */
  timeoutSeconds?: number;
  /** Ends the subscription: the loop over it finishes without an error. */
  signal?: AbortSignal;
  /**
   * Told of each failure the subscription recovers from by reconnecting after a backoff (lost
   * connection, 408, 429, 5xx). Failures that end it (other 4xx) are thrown from the loop instead.
   * @default none
   */
  onError?: (error: ApiError) => void;
}

/** The header that marks a control record. */
export const CONTROL_HEADER = "trigger-control";

/**
 * Reads back a value appended with `sessions.append`: a string that is JSON text is parsed,
 * anything else is returned as it is. A value appended as a string that happens to be JSON text
 * (`"42"`, `"true"`) therefore comes back parsed; append objects when the type matters.
 *
 * @example
 * await sessions.append("chat-42", "in", { text: "hi" });
 * const [record] = await sessions.records("chat-42", "in");
 * parseRecordData(record.data); // { text: "hi" }
 */
export function parseRecordData<T = unknown>(data: unknown): T {
  if (typeof data !== "string") return data as T;
  try {
    return JSON.parse(data) as T;
  } catch {
    return data as T;
  }
}

/**
 * What a control record says (`"turn-complete"`, `"upgrade-required"`), or undefined for a data record.
 *
 * @example
 * for await (const record of sessions.subscribe("chat-42", "out")) {
 *   if (controlSubtype(record) === "turn-complete") break;
 * }
 */
export function controlSubtype(record: Pick<SessionRecord, "headers" | "data">): string | undefined {
  if (record.data !== null && record.data !== undefined) return undefined;
  return record.headers?.find(([name]) => name === CONTROL_HEADER)?.[1];
}

function channelPath(ref: string, io: SessionChannel): string {
  return `/realtime/v1/sessions/${segment(ref)}/${segment(io)}`;
}

export async function appendRecord(http: HttpTransport, ref: string, io: SessionChannel, value: unknown, options: AppendRecordOptions): Promise<AppendedRecord> {
  const partId = options.partId ?? nanoid();
  const isText = typeof value === "string";
  // An empty body (and `undefined`, which has no JSON) is refused by the server: 400.
  const content = isText ? value : (JSON.stringify(value) ?? "");
  const path = `${channelPath(ref, io)}/append`;
  const response = await http.request<unknown>({
    method: "POST",
    path,
    rawBody: { content, contentType: isText ? "text/plain; charset=utf-8" : "application/json" },
    headers: { "x-part-id": partId },
  });
  return { seq: validateResponse(AppendRecordResponse, response, `POST ${path}`).seq, id: partId };
}

export async function readRecords(http: HttpTransport, ref: string, io: SessionChannel, options: ReadRecordsOptions): Promise<SessionRecord[]> {
  const path = `${channelPath(ref, io)}/records`;
  const query = { afterEventId: options.afterEventId === undefined ? undefined : String(options.afterEventId) };
  const { records } = validateResponse(SessionRecordsResponse, await http.request<unknown>({ method: "GET", path, query }), `GET ${path}`);
  return records.map((r) => withHeaders({ seq: r.seqNum, id: r.id, data: r.data }, r.headers));
}

function withHeaders(record: SessionRecord, headers: SessionRecordHeader[] | undefined): SessionRecord {
  return headers && headers.length > 0 ? { ...record, headers } : record;
}

/** A record of an `event: batch` frame, as the server sends it (S2's shape). */
interface StreamRecord {
  seq_num: number;
  headers?: SessionRecordHeader[];
  body: string;
}

/**
 * The records of one `event: batch` frame. `body` is `{"data":…,"id":…}`, or empty for a control
 * record; a record whose first header name is empty is a stream command, not a record.
 */
export function recordsOfBatch(data: string): SessionRecord[] {
  let parsed: { records?: StreamRecord[] };
  try {
    parsed = JSON.parse(data) as { records?: StreamRecord[] };
  } catch {
    throw new ApiResponseError(200, "session stream: a batch event is not JSON", data);
  }
  const out: SessionRecord[] = [];
  for (const record of parsed.records ?? []) {
    if (typeof record.seq_num !== "number") throw new ApiResponseError(200, "session stream: a record has no seq_num", data);
    const headers = record.headers ?? [];
    if (headers[0]?.[0] === "") continue;
    if (!record.body) {
      out.push(withHeaders({ seq: record.seq_num, id: "", data: null }, headers));
      continue;
    }
    let envelope: { data?: unknown; id?: unknown };
    try {
      envelope = JSON.parse(record.body) as { data?: unknown; id?: unknown };
    } catch {
      throw new ApiResponseError(200, `session stream: record ${record.seq_num} has a body that is not JSON`, data);
    }
    out.push(withHeaders({ seq: record.seq_num, id: String(envelope.id ?? ""), data: envelope.data ?? null }, headers));
  }
  return out;
}

/**
 * The records of a channel as they land, read from the SSE stream. Connects when iterated. When
 * the server ends a long poll it reconnects at once after the last record it got; after a lost
 * connection, a 408, 429 or 5xx it reconnects after the request backoff (`requestOptions.retry`'s
 * delays; it never gives up). Any other non-2xx ends the loop with its ApiError. Records already
 * seen (sequence number not above the cursor) are never yielded twice.
 */
export function subscribeRecords(http: HttpTransport, ref: string, io: SessionChannel, options: SubscribeOptions): AsyncIterable<SessionRecord> {
  return {
    [Symbol.asyncIterator]: () => streamRecords(http, channelPath(ref, io), options),
  };
}

async function* streamRecords(http: HttpTransport, path: string, options: SubscribeOptions): AsyncGenerator<SessionRecord> {
  const { signal } = options;
  let cursor = options.lastEventId === undefined ? undefined : Number(options.lastEventId);
  let failures = 0;
  while (!signal?.aborted) {
    // One per connection: aborted when the caller stops, so the server sees the connection close.
    const connection = new AbortController();
    const stop = () => connection.abort(signal?.reason);
    signal?.addEventListener("abort", stop, { once: true });
    try {
      const headers: Record<string, string> = {};
      if (cursor !== undefined) headers["last-event-id"] = String(cursor);
      if (options.timeoutSeconds !== undefined) headers["timeout-seconds"] = String(options.timeoutSeconds);
      const response = await http.openEventStream({ path, headers, signal: connection.signal });
      failures = 0;
      for await (const event of readServerSentEvents(response.body!)) {
        if (event.event !== "batch") continue;
        for (const record of recordsOfBatch(event.data)) {
          if (cursor !== undefined && record.seq <= cursor) continue;
          cursor = record.seq;
          yield record;
        }
      }
      // The server ended the long poll: reconnect after the cursor.
    } catch (error) {
      if (signal?.aborted) return;
      const outcome = failureOutcome(error);
      if (!outcome) throw error;
      failures++;
      const decision = decideRetry(failures, outcome.attempt, { ...http.config.requestOptions.retry, maxAttempts: Infinity });
      if (!decision.retry) throw outcome.error;
      options.onError?.(outcome.error);
      await abortableDelay(decision.delayMs, signal);
    } finally {
      signal?.removeEventListener("abort", stop);
      connection.abort();
    }
  }
}

/** A failure a subscription may recover from by reconnecting, as the retry rule sees it; else undefined. */
function failureOutcome(error: unknown): { attempt: AttemptOutcome; error: ApiError } | undefined {
  if (error instanceof ApiConnectionError) return { attempt: { kind: "connectionError" }, error };
  if (error instanceof ApiResponseError) return undefined;
  if (error instanceof ApiError && error.status !== undefined) {
    return { attempt: { kind: "response", status: error.status, headers: error.headers ?? new Headers() }, error };
  }
  if (error instanceof ApiError) return undefined;
  // Reading the body failed: the connection was lost mid-stream.
  const message = error instanceof Error ? error.message : String(error);
  return { attempt: { kind: "connectionError" }, error: new ApiConnectionError(`Session stream interrupted: ${message}`, { cause: error }) };
}

function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
