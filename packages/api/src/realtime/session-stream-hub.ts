import type { SharedListener } from "@svc/runtime/db";
import { CHANNELS, MAX_RECORDS_PER_READ, readRecords, readStreamChunks, sseRecordJson, streamRecordJson, type Queryable } from "@svc/runtime/engine";
import { batchFrame } from "./sse.ts";

/** Where a subscriber's records go: the SSE response. `write` returns false when the client reads too slowly. */
export interface StreamSink {
  write(frame: string): boolean;
  /** Ends the stream (the client reconnects with Last-Event-ID). */
  end(): void;
}

/** Where a hub's records are stored: read after a sequence number, as SSE records. */
export interface RecordSource {
  /** The NOTIFY channel appends announce records on (`{ e, k, s, io, seq, r? }`). */
  channel: string;
  read(db: Queryable, sourceId: string, io: "in" | "out", afterSeq: number, limit: number): Promise<{ seq: string; json: string }[]>;
}

/** Session channel records (sourceId: the session's id). */
export const SESSION_RECORDS: RecordSource = {
  channel: CHANNELS.sessionRecords,
  read: async (db, sessionId, io, afterSeq, limit) => (await readRecords(db, sessionId, io, afterSeq, limit)).map((r) => ({ seq: r.seq, json: sseRecordJson(r) })),
};

/** A run's stream chunks (sourceId: `<run id>/<stream key>`, as the append's notice names it). */
export const RUN_STREAM_RECORDS: RecordSource = {
  channel: CHANNELS.runStreamRecords,
  read: async (db, sourceId, io, afterSeq, limit) => {
    const slash = sourceId.indexOf("/");
    const rows = await readStreamChunks(db, sourceId.slice(0, slash), io, sourceId.slice(slash + 1), afterSeq, limit);
    return rows.map((r) => ({ seq: r.seq, json: streamRecordJson(r) }));
  },
};

interface Subscriber {
  key: string;
  /** The source's id: a session's (null until it exists: a subscription by externalId before the session was created), or `<run>/<key>`. */
  sessionId: string | null;
  io: "in" | "out";
  /** The last sequence number sent. */
  lastSeq: number;
  sink: StreamSink;
  /** A read from the database is under way; `again` asks it to read once more when done. */
  reading: boolean;
  again: boolean;
  closed: boolean;
  /** Ends the stream once a read finds nothing more (finish()). */
  finishing: boolean;
}

interface Notice {
  e: string;
  k: string;
  s: string;
  io: "in" | "out";
  seq: number;
  /** The record as the SSE stream carries it, when it fit in the NOTIFY. */
  r?: unknown;
}

/**
 * Live delivery of session channel records (or of runs' stream chunks: `source`) to SSE subscribers of this process. The process's one
 * LISTEN connection (`notices`), whatever the number of subscribers: an append on any replica NOTIFYs
 * `svc_session_records` at commit; this hub sends the record to each local subscriber of that
 * channel, serialised once. A subscriber that missed a sequence number (a lost notice, the
 * connection replaced, a record too large to ride in the notice) reads the gap from the database,
 * so nothing is lost or repeated: sequence numbers of one channel commit in order.
 */
export class SessionStreamHub {
  readonly #db: Queryable;
  readonly #subscribers = new Map<string, Set<Subscriber>>();
  readonly #onError: (error: unknown, context: string) => void;
  readonly #source: RecordSource;

  /** `source`: session records (the default), or RUN_STREAM_RECORDS for runs' streams. */
  constructor(options: { db: Queryable; notices: SharedListener; onError: (error: unknown, context: string) => void; source?: RecordSource }) {
    this.#db = options.db;
    this.#onError = options.onError;
    this.#source = options.source ?? SESSION_RECORDS;
    options.notices.route(this.#source.channel, {
      onNotification: (payload) => this.#onNotice(payload),
      // Notices sent while the connection was down are gone: every subscriber reads its gap.
      onReconnect: () => this.#readAll(),
    });
  }

  /** Ends every open stream (their clients reconnect with Last-Event-ID); the listener is its owner's to stop. */
  stop(): void {
    for (const set of this.#subscribers.values()) for (const sub of set) sub.sink.end();
    this.#subscribers.clear();
  }

  /** How many subscribers this process has (all channels). */
  get size(): number {
    let n = 0;
    for (const set of this.#subscribers.values()) n += set.size;
    return n;
  }

  /**
   * Subscribes to one channel after `afterSeq`: the records already there are read and sent
   * first, then each new one as it is appended. Returns the unsubscribe function; its `finish()`
   * sends what is there now and then ends the stream (the source will get no more records).
   */
  subscribe(input: { environmentId: string; streamKey: string; sessionId: string | null; io: "in" | "out"; afterSeq: number; sink: StreamSink }): (() => void) & { finish(): void } {
    const key = channelKey(input.environmentId, input.streamKey, input.io);
    const sub: Subscriber = { key, sessionId: input.sessionId, io: input.io, lastSeq: input.afterSeq, sink: input.sink, reading: false, again: false, closed: false, finishing: false };
    let set = this.#subscribers.get(key);
    if (!set) this.#subscribers.set(key, (set = new Set()));
    set.add(sub);
    // Registered before reading, so a record appended meanwhile is either read or announced.
    if (sub.sessionId !== null) this.#read(sub);
    return Object.assign(() => this.#remove(sub), {
      finish: () => {
        sub.finishing = true;
        this.#read(sub);
      },
    });
  }

  #remove(sub: Subscriber): void {
    sub.closed = true;
    const set = this.#subscribers.get(sub.key);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.#subscribers.delete(sub.key);
  }

  #onNotice(payload: string): void {
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch (error) {
      this.#onError(error, "session stream notice");
      return;
    }
    const set = this.#subscribers.get(channelKey(notice.e, notice.k, notice.io));
    if (!set) return;
    // Serialised once for every subscriber that is exactly one record behind.
    const frame = notice.r === undefined ? null : batchFrame(JSON.stringify(notice.r), notice.seq);
    for (const sub of set) {
      sub.sessionId ??= notice.s;
      if (sub.reading || frame === null || sub.lastSeq !== notice.seq - 1) {
        if (sub.lastSeq < notice.seq) this.#read(sub);
        continue;
      }
      sub.lastSeq = notice.seq;
      this.#send(sub, frame);
    }
  }

  #send(sub: Subscriber, frame: string): void {
    // A client that does not keep up is cut off rather than buffered without end: it reconnects
    // with Last-Event-ID and reads what it missed from the database.
    if (!sub.sink.write(frame)) {
      this.#remove(sub);
      sub.sink.end();
    }
  }

  #readAll(): void {
    for (const set of this.#subscribers.values()) for (const sub of set) if (sub.sessionId !== null) this.#read(sub);
  }

  /** Reads and sends the subscriber's records after lastSeq, until there are no more. */
  #read(sub: Subscriber): void {
    if (sub.reading) {
      sub.again = true;
      return;
    }
    sub.reading = true;
    void (async () => {
      try {
        do {
          sub.again = false;
          let rows: { seq: string; json: string }[];
          do {
            rows = await this.#source.read(this.#db, sub.sessionId!, sub.io, sub.lastSeq, MAX_RECORDS_PER_READ);
            if (sub.closed) return;
            if (rows.length > 0) {
              sub.lastSeq = Number(rows[rows.length - 1]!.seq);
              this.#send(sub, batchFrame(rows.map((r) => r.json).join(","), sub.lastSeq));
            }
          } while (rows.length === MAX_RECORDS_PER_READ && !sub.closed);
        } while (sub.again && !sub.closed);
        if (sub.finishing && !sub.closed) {
          this.#remove(sub);
          sub.sink.end();
        }
      } catch (error) {
        // The stream ends; the client reconnects with Last-Event-ID and reads from there.
        this.#onError(error, "session stream read");
        this.#remove(sub);
        sub.sink.end();
      } finally {
        sub.reading = false;
      }
    })();
  }
}

function channelKey(environmentId: string, streamKey: string, io: string): string {
  return `${environmentId}\n${io}\n${streamKey}`;
}
