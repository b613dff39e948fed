import { sessionsClient } from "../client/global.ts";
import type { AppendedRecord, AppendRecordOptions, ReadRecordsOptions, SessionRecord, SubscribeOptions } from "../client/session-channels.ts";
import { currentExecution, requireExecution, type ChannelRecord, type ChannelWaitOptions } from "./run-context.ts";
import { MAX_DURATION_MS, parseDuration } from "../durations.ts";
import { toWaitResult, type WaitResult } from "./wait-result.ts";

/** The control record that ends a turn: a client reading `.out` knows the run is done answering. */
export const TURN_COMPLETE = "turn-complete";
const CONTROL_HEADER = "trigger-control";

/** A channel value as stored: JSON text of any value (a string appended over HTTP stays a string). */
export function encodeRecord(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error("session.out.append(): the value cannot be serialised as JSON");
  return text;
}

/**
 * What a run gets from an `.in` record: records appended over HTTP are the request body as text,
 * which the SDK's `send(value)` made JSON; it is parsed back when it is JSON.
 */
export function decodeRecordData(data: unknown): unknown {
  if (typeof data !== "string") return data;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/**
 * The `.in` side of a session: what clients send to its runs. `append`, `records` and `subscribe`
 * go over HTTP (from a backend, or from a run writing to another session); `wait` and `peek` are
 * for the session's runs.
 */
export class SessionInput<T = unknown> {
  constructor(readonly sessionRef: string) {}

  /**
   * Sends a record (a string as is, anything else as JSON); starts a run when the session has none
   * alive. Retries of the call store it once.
   *
   * @example
   * await sessions.open("chat-42").in.append({ text: "Hello!" });
   */
  append(value: T, options?: AppendRecordOptions): Promise<AppendedRecord> {
    return sessionsClient.append(this.sessionRef, "in", value, options);
  }

  /** The records after a sequence number, at once (see `sessions.records`). */
  records(options?: ReadRecordsOptions): Promise<SessionRecord[]> {
    return sessionsClient.records(this.sessionRef, "in", options);
  }

  /** The records as they land, over SSE (see `sessions.subscribe`). */
  subscribe(options?: SubscribeOptions): AsyncIterable<SessionRecord> {
    return sessionsClient.subscribe(this.sessionRef, "in", options);
  }

  /**
   * Waits for the next record the run has not received yet, checkpointed: the run gives its
   * worker slot back and costs only rows until a record arrives (or the timeout passes, or the
   * session is closed: `ok: false`). Returns at once when a record is already there. A replay of
   * the run gets the same records at the same waits.
   *
   * @example
   * const message = await session.in.wait<{ text: string }>({ timeout: "1h" });
   * if (!message.ok) return; // timed out or closed
   * console.log(message.output.text);
   */
  async wait<U = T>(options?: ChannelWaitOptions): Promise<WaitResult<U>> {
    const raw = await requireExecution("session.in.wait").waitForChannel(this.sessionRef, options);
    return toWaitResult<U>(raw.ok ? { ok: true, output: decodeRecordData(raw.record.data) } : raw);
  }

  /**
   * Waits for the next record the run has not received yet without a checkpoint: the run keeps its
   * worker slot (a reply within seconds costs no suspend and resume), up to `timeout` (a duration
   * such as "30s", or milliseconds; default 10 minutes). `ok: false` when it passes. A replay of
   * the run gets the same result.
   *
   * @example
   * const quick = await session.in.once({ timeout: "30s" });
   * const message = quick.ok ? quick : await session.in.wait({ timeout: "1h" });
   */
  async once<U = T>(options: { timeout?: string | number } = {}): Promise<WaitResult<U>> {
    const timeout = options.timeout ?? "10m";
    const ms = typeof timeout === "number" ? timeout : parseDuration(timeout);
    if (ms === null || !Number.isFinite(ms) || ms < 0 || ms > MAX_DURATION_MS) throw new Error(`session.in.once(): ${JSON.stringify(timeout)} is not a timeout (e.g. "30s", or milliseconds)`);
    const raw = await requireExecution("session.in.once").onceChannel(this.sessionRef, ms);
    return toWaitResult<U>(raw.ok ? { ok: true, output: decodeRecordData(raw.record.data) } : raw);
  }

  /**
   * The next record the run has not received yet, if one is there (without waiting, and without
   * taking it: the next `wait()` returns it).
   */
  async peek<U = T>(): Promise<U | undefined> {
    const record = await requireExecution("session.in.peek").peekChannel(this.sessionRef);
    return record === undefined ? undefined : (decodeRecordData(record.data) as U);
  }
}

/** A writer of `.out` chunks: `write` returns at once; chunks are sent in order, batched while one send is under way. */
export interface SessionWriter<T = unknown> {
  write(chunk: T): void;
  /** Resolves once every chunk written so far is stored (and delivered to subscribers). */
  flush(): Promise<void>;
  /** Flushes and stops accepting chunks. */
  close(): Promise<void>;
}

/**
 * The `.out` side of a session: what its runs send to clients. Inside a run, `append`, `writer`,
 * `writeControl` and `trimTo` write through the run (replay-safe); from a backend, `append` goes
 * over HTTP with the secret key. `records` and `subscribe` read over HTTP from anywhere.
 */
export class SessionOutput<T = unknown> {
  constructor(readonly sessionRef: string) {}

  /**
   * Appends one record; subscribers receive it at once. Inside a run a replay appends nothing
   * twice; from a backend the call needs a secret key.
   *
   * @example
   * await session.out.append({ type: "text", text: "Hello!" });
   */
  async append(value: T): Promise<void> {
    const execution = currentExecution();
    if (!execution) {
      await sessionsClient.append(this.sessionRef, "out", value);
      return;
    }
    await execution.appendToChannel(this.sessionRef, [{ data: encodeRecord(value) }]);
  }

  /** The records after a sequence number, at once (see `sessions.records`). */
  records(options?: ReadRecordsOptions): Promise<SessionRecord[]> {
    return sessionsClient.records(this.sessionRef, "out", options);
  }

  /**
   * The records as they land, over SSE, reconnecting by itself with Last-Event-ID (see
   * `sessions.subscribe`).
   *
   * @example
   * for await (const record of sessions.open("chat-42").out.subscribe()) console.log(parseRecordData(record.data));
   */
  subscribe(options?: SubscribeOptions): AsyncIterable<SessionRecord> {
    return sessionsClient.subscribe(this.sessionRef, "out", options);
  }

  /**
   * Appends a control record (empty body, `trigger-control: <subtype>` header), e.g.
   * `turn-complete` at the end of each answer.
   */
  async writeControl(subtype: string, extraHeaders: [string, string][] = []): Promise<void> {
    await requireExecution("session.out.writeControl").appendToChannel(this.sessionRef, [{ data: null, headers: [[CONTROL_HEADER, subtype], ...extraHeaders] }]);
  }

  /**
   * Drops the `.out` records below sequence number `earliestSeq`, so a long conversation's `.out`
   * stays bounded (a reader resuming from before it gets the records from there on). Records are
   * otherwise kept as long as the session exists.
   */
  async trimTo(earliestSeq: number): Promise<void> {
    if (!Number.isSafeInteger(earliestSeq) || earliestSeq < 0) throw new Error("session.out.trimTo(): a record sequence number is required");
    await requireExecution("session.out.trimTo").trimChannel(this.sessionRef, earliestSeq);
  }

  /**
   * A writer for streaming: `write` returns at once; the run sends chunks in order, right away
   * when no send is under way, else together with those that queued meanwhile, in one append (no
   * timer: the latency is one round trip). Waits flush it first.
   *
   * @example
   * const writer = session.out.writer();
   * for await (const token of llm.stream(prompt)) writer.write({ type: "delta", text: token });
   * await writer.close();
   */
  writer<U = T>(): SessionWriter<U> {
    const execution = requireExecution("session.out.writer");
    let last: Promise<void> = Promise.resolve();
    let failure: unknown = null;
    let closed = false;
    const flush = async () => {
      await last;
      if (failure) throw failure;
    };
    return {
      write: (chunk) => {
        if (closed) throw new Error("session.out.writer(): write() after close()");
        if (failure) throw failure;
        last = execution.appendToChannel(this.sessionRef, [{ data: encodeRecord(chunk) }]).catch((error: unknown) => {
          failure ??= error;
        });
      },
      flush,
      close: async () => {
        closed = true;
        await flush();
      },
    };
  }
}

/** A session's channels, from a run or from a backend (`sessions.open`). */
export class RunSession<TIn = unknown, TOut = unknown> {
  readonly in: SessionInput<TIn>;
  readonly out: SessionOutput<TOut>;
  constructor(readonly id: string) {
    this.in = new SessionInput(id);
    this.out = new SessionOutput(id);
  }

  /**
   * Hands the session over to a new run of its task (for example to pick up a new version); the
   * new run reads `.in` from where this one stopped. Returns `swapped: false` when another run had
   * already taken over. The calling run should return after this.
   */
  endAndContinue(options: { reason?: string } = {}): Promise<{ runId: string; swapped: boolean }> {
    return requireExecution("session.endAndContinue").continueSession(this.id, options.reason ?? "continue");
  }

  /** The session's row (over HTTP). */
  retrieve() {
    return sessionsClient.retrieve(this.id);
  }
}

export type { ChannelRecord };
