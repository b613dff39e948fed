import { streamsClient } from "../client/global.ts";
import type { ReadStreamOptions } from "../client/streams.ts";
import { MAX_DURATION_MS, parseDuration } from "../durations.ts";
import { requireExecution, type InputWaitOptions, type StreamTarget } from "./run-context.ts";
import { toWaitResult, type WaitResult } from "./wait-result.ts";

/** The key `streams.pipe(source)` and `streams.read(runId)` use without one (Trigger.dev's). */
export const DEFAULT_STREAM_KEY = "default";

export interface PipeStreamOptions {
  /** Write to the run's parent or root run instead (the run itself when it has none); default "self". */
  target?: StreamTarget;
  /** Stops reading the source: what was read so far is stored. */
  signal?: AbortSignal;
}

export interface PipedStream<T> {
  /** The source's values, for the run's own use (each is also written to the stream). */
  stream: AsyncIterable<T>;
  /** Resolves once the source has ended and every chunk is stored. */
  waitUntilComplete(): Promise<void>;
}

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
  return { stream: toCode, waitUntilComplete: () => done };
}

/**
 * Appends one value to the run's realtime stream `key` (from task code; resolves once stored).
 * A replay of the run after a wait does not store it twice.
 */
async function append<T>(key: string, value: T, options?: { target?: StreamTarget }): Promise<void> {
  await requireExecution("streams.append").streams.append(key, options?.target ?? "self", [value]);
}

/**
 * The chunks of a run's realtime stream, in order (over HTTP, with the ambient credentials): from
 * the first (or `startIndex`, chunks being numbered from 1), until the run has finished and every
 * chunk was read, or `timeoutInSeconds` (default 60) pass without a new one.
 */
async function read<T = unknown>(runId: string, key: string = DEFAULT_STREAM_KEY, options?: ReadStreamOptions): Promise<AsyncIterable<T>> {
  return streamsClient.read<T>(runId, key, options);
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
    on: (handler) => {
      const execution = requireExecution(`streams.input("${id}").on`);
      const run = { id: execution.ctx.run.id, attempt: execution.ctx.attempt.number, taskId: execution.ctx.task.id };
      // A failing handler stops the subscription; the run's log says why.
      return execution.streams.onInput(id, handler as (data: unknown) => void | Promise<void>, (error) =>
        execution.logs.write({ level: "error", message: `streams.input("${id}").on(): ${error instanceof Error ? error.message : String(error)}`, at: execution.now(), run }),
      );
    },
  };
}

/**
 * A run's realtime streams and input streams, with Trigger.dev v4's names: `pipe`, `append` and
 * `read` for the streams a run sends to its subscribers, `input({ id })` for values sent to a run.
 *
 * @example
 * const { stream } = streams.pipe("openai", completion); // inside a task
 * for await (const chunk of await streams.read(runId, "openai")) console.log(chunk); // anywhere
 * const approval = streams.input<{ ok: boolean }>({ id: "approval" });
 * const answer = await approval.wait({ timeout: "1h" }); // inside a task: the slot is freed
 * await approval.send(runId, { ok: true }); // from a backend
 */
export const streams = { pipe, append, read, input };

/** `metadata.stream(key, source)`: Trigger.dev's older name of `streams.pipe`; resolves to the values, for the run's own use. */
export async function metadataStream<T>(key: string, source: Source<T>, signal?: AbortSignal): Promise<AsyncIterable<T>> {
  return pipe(key, source, signal ? { signal } : {}).stream;
}
