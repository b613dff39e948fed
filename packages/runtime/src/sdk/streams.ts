import { streamsClient } from "../client/global.ts";
import type { ReadStreamOptions } from "../client/streams.ts";
import { MAX_DURATION_MS, parseDuration } from "../durations.ts";
import { requireExecution, type InputWaitOptions, type RunExecution, type StreamTarget } from "./run-context.ts";
import { toWaitResult, type WaitResult } from "./wait-result.ts";

/** The key `streams.pipe(source)` and `streams.read(runId)` use without one (Trigger.dev's). */
export const DEFAULT_STREAM_KEY = "default";

export interface PipeStreamOptions {
  /** Write to the run's parent or root run instead (the run itself when it has none). @default "self" */
  target?: StreamTarget;
  /** Stops reading the source: what was read so far is stored. */
  signal?: AbortSignal;
  /** Trigger.dev's span name for the operation: accepted and ignored (svc makes no span per stream). */
  spanName?: string;
  /** Trigger.dev's collapsed span: accepted and ignored. */
  collapsed?: boolean;
  /** Trigger.dev's API request options: accepted and ignored (svc's worker stores the chunks). */
  requestOptions?: Record<string, unknown>;
}

/** What `waitUntilComplete()` resolves to (Trigger.dev's StreamWriteResult; svc sets nothing in it). */
export interface StreamWriteResult {
  lastEventId?: string;
}

export interface PipedStream<T> {
  /** The source's values, for the run's own use (each is also written to the stream). */
  stream: ReadableStream<T> & AsyncIterable<T>;
  /** Resolves once the source has ended and every chunk is stored. */
  waitUntilComplete(): Promise<StreamWriteResult>;
}

export interface AppendStreamOptions {
  /** Append to the run's parent or root run instead (the run itself when it has none). @default "self" */
  target?: StreamTarget;
  /** Trigger.dev's API request options: accepted and ignored (svc's worker stores the chunk). */
  requestOptions?: Record<string, unknown>;
}

/** What `execute` of `streams.writer()` gets: `write` one chunk, `merge` every chunk of a stream. */
export interface StreamWriter<T> {
  write(part: T): void;
  merge(stream: ReadableStream<T>): void;
}

export interface WriterStreamOptions<T> extends PipeStreamOptions {
  /**
   * Writes the stream's chunks. The stream ends once `execute` has returned (or its promise
   * settled) and every merged stream has ended. An error it throws, or a merged stream's, ends
   * the stream there and goes to the run's log.
   */
  execute(writer: StreamWriter<T>): Promise<void> | void;
}

/** `streams.define({ id })`: one realtime stream, typed, by its key (Trigger.dev's RealtimeDefinedStream). */
export interface RealtimeDefinedStream<T> {
  id: string;
  /** `streams.pipe(id, source, options)` (inside a task). */
  pipe(source: AsyncIterable<T> | ReadableStream<T>, options?: PipeStreamOptions): PipedStream<T>;
  /** `streams.read(runId, id, options)` (anywhere). */
  read(runId: string, options?: ReadStreamOptions): Promise<AsyncIterable<T>>;
  /** `streams.append(id, value, options)` (inside a task). */
  append(value: T, options?: AppendStreamOptions): Promise<void>;
  /** `streams.writer(id, options)` (inside a task). */
  writer(options: WriterStreamOptions<T>): PipedStream<T>;
}

/** The chunk type of a defined stream: `InferStreamType<typeof myStream>`. */
export type InferStreamType<S> = S extends RealtimeDefinedStream<infer T> ? T : unknown;

type Source<T> = AsyncIterable<T> | ReadableStream<T>;

function isSource(value: unknown): value is Source<unknown> {
  return typeof value === "object" && value !== null && (Symbol.asyncIterator in value || typeof (value as ReadableStream).getReader === "function");
}

function toReadable<T>(source: Source<T>): ReadableStream<T> {
  return source instanceof ReadableStream ? source : ReadableStream.from(source);
}

/**
 * Writes each value of `source` to the run's realtime stream `key` as it comes, and hands the
 * values back for the run's own use. Subscribers (`runs.subscribeToRun(id).withStreams()`,
 * `useRealtimeRunWithStreams`, `streams.read`) get every chunk in order. The run ends only once
 * the source has ended and every chunk is stored. A replay of the run after a wait pipes again
 * from the start: chunks already stored are not stored twice.
 */
function pipe<T>(key: string, source: Source<T>, options?: PipeStreamOptions): PipedStream<T>;
function pipe<T>(source: Source<T>, options?: PipeStreamOptions): PipedStream<T>;
function pipe<T>(keyOrSource: string | Source<T>, sourceOrOptions?: Source<T> | PipeStreamOptions, maybeOptions?: PipeStreamOptions): PipedStream<T> {
  const [key, source, options] =
    typeof keyOrSource === "string" ? [keyOrSource, sourceOrOptions as Source<T>, maybeOptions] : [DEFAULT_STREAM_KEY, keyOrSource, sourceOrOptions as PipeStreamOptions | undefined];
  if (!isSource(source)) throw new Error("streams.pipe(): the source must be an async iterable or a ReadableStream");
  const streams = requireExecution("streams.pipe").streams;
  const [toServer, toCode] = toReadable(source).tee();
  const done = (async () => {
    const reader = toServer.getReader();
    const writes: Promise<void>[] = [];
    try {
      for (;;) {
        if (options?.signal?.aborted) break;
        const { done: ended, value } = await reader.read();
        if (ended) break;
        // Queued in order (sent while the next value is read, batched while a send is under way).
        writes.push(streams.append(key, options?.target ?? "self", [value]));
      }
    } finally {
      reader.releaseLock();
    }
    await Promise.all(writes);
  })();
  streams.track(key, done);
  return { stream: toCode as ReadableStream<T> & AsyncIterable<T>, waitUntilComplete: async () => (await done, {}) };
}

/** Trigger.dev's test of append's second argument: options, or the value (with the first the key). */
function isAppendOptions(value: unknown): value is AppendStreamOptions {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const options = value as { target?: unknown; requestOptions?: unknown };
  return typeof options.target === "string" || (typeof options.requestOptions === "object" && options.requestOptions !== null);
}

/**
 * Appends one value to the run's realtime stream `key` (`"default"` without one; from task code,
 * resolves once stored). A replay of the run after a wait does not store it twice.
 */
function append<T>(key: string, value: T, options?: AppendStreamOptions): Promise<void>;
function append<T>(value: T, options?: AppendStreamOptions): Promise<void>;
async function append<T>(keyOrValue: string | T, valueOrOptions?: T | AppendStreamOptions, maybeOptions?: AppendStreamOptions): Promise<void> {
  // As Trigger.dev reads its arguments: a key needs a value after it that is not options.
  const [key, value, options] =
    typeof keyOrValue === "string" && valueOrOptions !== undefined && !isAppendOptions(valueOrOptions)
      ? [keyOrValue, valueOrOptions as T, maybeOptions]
      : [DEFAULT_STREAM_KEY, keyOrValue as T, isAppendOptions(valueOrOptions) ? valueOrOptions : maybeOptions];
  await requireExecution("streams.append").streams.append(key, options?.target ?? "self", [value]);
}

/**
 * The chunks of a run's realtime stream `key` (`"default"` without one), in order (over HTTP,
 * with the ambient credentials): from the first (or `startIndex`, chunks being numbered from 1),
 * until the run has finished and every chunk was read, or `timeoutInSeconds` (default 60) pass
 * without a new one.
 */
function read<T = unknown>(runId: string, key?: string, options?: ReadStreamOptions): Promise<AsyncIterable<T>>;
function read<T = unknown>(runId: string, options?: ReadStreamOptions): Promise<AsyncIterable<T>>;
async function read<T = unknown>(runId: string, keyOrOptions?: string | ReadStreamOptions, maybeOptions?: ReadStreamOptions): Promise<AsyncIterable<T>> {
  const [key, options] = typeof keyOrOptions === "string" ? [keyOrOptions, maybeOptions] : [DEFAULT_STREAM_KEY, keyOrOptions];
  return streamsClient.read<T>(runId, key, options);
}

function runRef(execution: RunExecution) {
  return { id: execution.ctx.run.id, attempt: execution.ctx.attempt.number, taskId: execution.ctx.task.id };
}

/**
 * Writes chunks to the run's realtime stream `key` (`"default"` without one) from a function:
 * `write(part)` one chunk, `merge(stream)` every chunk of a ReadableStream, as they come. Returns
 * what `streams.pipe` returns: the chunks for the run's own use, and `waitUntilComplete()`.
 * Replays: as for `pipe`, a replay after a wait stores no chunk twice, chunks being numbered in
 * the order they are written; merged chunks are written in the order they arrive, which a replay
 * may not repeat (svc says so in the run's log the first time `merge` is used).
 *
 * @example
 * const { waitUntilComplete } = streams.writer("progress", {
 *   execute: ({ write, merge }) => {
 *     write({ step: "start" });
 *     merge(ReadableStream.from(steps()));
 *   },
 * });
 * await waitUntilComplete();
 */
function writer<T>(options: WriterStreamOptions<T>): PipedStream<T>;
function writer<T>(key: string, options: WriterStreamOptions<T>): PipedStream<T>;
function writer<T>(keyOrOptions: string | WriterStreamOptions<T>, maybeOptions?: WriterStreamOptions<T>): PipedStream<T> {
  const [key, options] = typeof keyOrOptions === "string" ? [keyOrOptions, maybeOptions] : [DEFAULT_STREAM_KEY, keyOrOptions];
  if (typeof options?.execute !== "function") throw new Error("streams.writer(): give options with an execute function");
  const execution = requireExecution("streams.writer");
  const failed = (what: string) => (error: unknown) =>
    execution.logs.write({ level: "error", message: `streams.writer("${key}"): ${what} failed: ${error instanceof Error ? error.message : String(error)}`, at: execution.now(), run: runRef(execution) });
  let controller!: ReadableStreamDefaultController<T>;
  const source = new ReadableStream<T>({ start: (c) => void (controller = c) });
  // After the stream closed (an error ended it) writes go nowhere, as in Trigger.dev.
  const enqueue = (part: T) => {
    try {
      controller.enqueue(part);
    } catch {
      // closed
    }
  };
  const pending: Promise<void>[] = [];
  try {
    const result = options.execute({
      write: enqueue,
      merge: (stream) => {
        execution.notices.say("writer-merge-order", runRef(execution));
        pending.push(
          (async () => {
            const reader = stream.getReader();
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              enqueue(value);
            }
          })().catch(failed("a merged stream")),
        );
      },
    });
    if (result) pending.push(Promise.resolve(result).catch(failed("execute")));
  } catch (error) {
    failed("execute")(error);
  }
  void (async () => {
    // merge() may be called later (from execute's async work): wait for each one added meanwhile.
    while (pending.length > 0) await pending.shift();
    try {
      controller.close();
    } catch {
      // closed
    }
  })();
  return pipe(key, source, options);
}

/**
 * A realtime stream by its key, typed: the same `pipe`, `append` and `writer` (inside a task) and
 * `read` (anywhere) with the key given once. Define it in a file both the task and its readers
 * import.
 *
 * @example
 * export const progress = streams.define<{ percent: number }>({ id: "progress" });
 * await progress.append({ percent: 50 }); // inside a task
 * for await (const chunk of await progress.read(runId)) console.log(chunk.percent); // anywhere
 */
function define<T>(options: { id: string }): RealtimeDefinedStream<T> {
  const id = options.id;
  return {
    id,
    pipe: (source, pipeOptions) => pipe(id, source, pipeOptions),
    read: (runId, readOptions) => read<T>(runId, id, readOptions),
    append: async (value, appendOptions) => requireExecution("streams.append").streams.append(id, appendOptions?.target ?? "self", [value]),
    writer: (writerOptions) => writer(id, writerOptions),
  };
}

export interface InputStreamOnceOptions {
  /** Give up after this many milliseconds (ok: false); default 10 minutes. */
  timeoutMs?: number;
}

/** An input stream of a run: values sent from outside (`send`), received by the run's code. */
export interface InputStream<T> {
  id: string;
  /** Sends a value to run `runId`'s input stream (from a backend, or another run). */
  send(runId: string, data: T): Promise<void>;
  /**
   * Waits for the next value the run has not received yet, checkpointed: the run gives its worker
   * slot back and costs only rows until a value is sent (or `timeout` passes: ok: false). Returns
   * at once when one is already there. A replay gets the same values at the same waits.
   */
  wait(options?: InputWaitOptions): Promise<WaitResult<T>>;
  /** The same without a checkpoint: the run keeps its slot (for answers within seconds), up to `timeoutMs`. */
  once(options?: InputStreamOnceOptions): Promise<WaitResult<T>>;
  /** `once` for `idleTimeoutInSeconds`, then `wait` (checkpointed) up to `timeout`. */
  waitWithIdleTimeout(options: { idleTimeoutInSeconds: number; timeout?: string | Date }): Promise<WaitResult<T>>;
  /**
   * Calls `handler` with every value sent, from the first, while this execution of the run goes
   * on (live only: not recorded, so a replay after a wait calls it again for each value).
   */
  on(handler: (data: T) => void | Promise<void>): { off(): void };
  /**
   * The value the next `wait()` or `once()` would return at once, without taking it: the first
   * value sent that the run has not received, once this execution has seen it arrive; undefined
   * before that, or when there is none. Non-blocking, as in Trigger.dev: the first call starts
   * watching the stream, so a value already sent shows from a moment later on.
   * Replays: live, not recorded. Code that runs again after a wait sees the values as they are
   * now, which may differ from what the first execution saw: decide waits and steps by what
   * `wait()`/`once()` return, not by a peek (svc says so in the run's log, once).
   */
  peek(): T | undefined;
}

function input<T = unknown>(options: { id: string }): InputStream<T> {
  const id = options.id;
  const once = async (o?: InputStreamOnceOptions): Promise<WaitResult<T>> => {
    const ms = o?.timeoutMs ?? (parseDuration("10m") as number);
    if (!Number.isFinite(ms) || ms < 0 || ms > MAX_DURATION_MS) throw new Error(`streams.input("${id}").once(): ${String(o?.timeoutMs)} is not a timeout in milliseconds`);
    return toWaitResult<T>(await requireExecution(`streams.input("${id}").once`).streams.onceInput(id, ms));
  };
  const wait = async (o?: InputWaitOptions): Promise<WaitResult<T>> => toWaitResult<T>(await requireExecution(`streams.input("${id}").wait`).streams.waitForInput(id, o));
  return {
    id,
    send: async (runId, data) => {
      await streamsClient.sendInput(runId, id, data);
    },
    wait,
    once,
    waitWithIdleTimeout: async (o) => {
      const quick = await once({ timeoutMs: o.idleTimeoutInSeconds * 1000 });
      return quick.ok ? quick : wait(o.timeout === undefined ? {} : { timeout: o.timeout });
    },
    peek: () => {
      const execution = requireExecution(`streams.input("${id}").peek`);
      execution.notices.say("input-peek-live", runRef(execution));
      return execution.streams.peekInput(id) as T | undefined;
    },
    on: (handler) => {
      const execution = requireExecution(`streams.input("${id}").on`);
      const run = runRef(execution);
      // A failing handler stops the subscription; the run's log says why.
      return execution.streams.onInput(id, handler as (data: unknown) => void | Promise<void>, (error) =>
        execution.logs.write({ level: "error", message: `streams.input("${id}").on(): ${error instanceof Error ? error.message : String(error)}`, at: execution.now(), run }),
      );
    },
  };
}

/**
 * A run's realtime streams and input streams, with Trigger.dev v4's names: `pipe`, `append`,
 * `writer` and `read` for the streams a run sends to its subscribers, `define({ id })` for one of
 * them typed, `input({ id })` for values sent to a run.
 *
 * @example
 * const { stream } = streams.pipe("openai", completion); // inside a task
 * for await (const chunk of await streams.read(runId, "openai")) console.log(chunk); // anywhere
 * const approval = streams.input<{ ok: boolean }>({ id: "approval" });
 * const answer = await approval.wait({ timeout: "1h" }); // inside a task: the slot is freed
 * await approval.send(runId, { ok: true }); // from a backend
 */
export const streams = { pipe, append, read, writer, define, input };

/** `metadata.stream(key, source)`: Trigger.dev's older name of `streams.pipe`; resolves to the values, for the run's own use. */
export async function metadataStream<T>(key: string, source: Source<T>, signal?: AbortSignal): Promise<AsyncIterable<T>> {
  return pipe(key, source, signal ? { signal } : {}).stream;
}
