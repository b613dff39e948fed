// A run's realtime streams and input streams over HTTP (/realtime/v1/streams/…): read a stream's
// chunks as they land (SSE), append to a stream from a backend, send to an input stream.
import { AppendToStreamResponse, type StreamTarget } from "../contracts/streams.ts";
import { ApiConnectionError, ApiError } from "./errors.ts";
import { readServerSentEvents } from "./event-stream.ts";
import { segment, type HttpTransport } from "./http.ts";
import { recordsOfBatch } from "./session-channels.ts";
import { validateResponse } from "./validate-response.ts";

export interface ReadStreamOptions {
  /** Start at this chunk (chunks are numbered from 1); default: the first. */
  startIndex?: number;
  /** How long the server keeps the stream open without a new chunk, in seconds (default 60). */
  timeoutInSeconds?: number;
  signal?: AbortSignal;
  /** `"latest"`: only chunks stored after the read starts (ignored with `startIndex`). @default "beginning" */
  from?: "beginning" | "latest";
}

/** How many times a read reconnects after a lost connection before it gives up. */
const MAX_RECONNECTS = 5;

/** A run's realtime streams and input streams (`client.streams`). */
export class StreamsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * The chunks of a run's stream, in order, as they land. Ends when the run has finished and every
   * chunk was read, or after `timeoutInSeconds` without a new one; a lost connection resumes after
   * the last chunk received (Last-Event-ID).
   *
   * @example
   * for await (const chunk of client.streams.read(runId, "openai")) process.stdout.write(String(chunk));
   */
  read<T = unknown>(runId: string, key: string, options: ReadStreamOptions = {}): AsyncIterable<T> {
    const http = this.connect();
    return { [Symbol.asyncIterator]: () => readChunks<T>(http, runId, key, options) };
  }

  /**
   * Appends one chunk (a string) to a run's stream from a backend (secret key); `target` writes
   * to the run's parent or root instead.
   */
  async append(runId: string, key: string, value: string, options: { target?: StreamTarget } = {}): Promise<{ seq: number }> {
    const path = `/realtime/v1/streams/${segment(runId)}/${options.target ?? "self"}/${segment(key)}/append`;
    const response = await this.connect().request<unknown>({ method: "POST", path, rawBody: { content: value, contentType: "text/plain; charset=utf-8" } });
    return { seq: validateResponse(AppendToStreamResponse, response, `POST ${path}`).seq };
  }

  /** Sends a value to a run's input stream `key` (what its `streams.input({ id: key }).wait()` returns). */
  async sendInput(runId: string, key: string, data: unknown): Promise<{ seq: number }> {
    const path = `/realtime/v1/streams/${segment(runId)}/input/${segment(key)}`;
    const response = await this.connect().request<unknown>({ method: "POST", path, body: { data } });
    return { seq: validateResponse(AppendToStreamResponse, response, `POST ${path}`).seq };
  }
}

async function* readChunks<T>(http: HttpTransport, runId: string, key: string, options: ReadStreamOptions): AsyncGenerator<T> {
  const path = `/realtime/v1/streams/${segment(runId)}/${segment(key)}`;
  let cursor = options.startIndex && options.startIndex > 1 ? options.startIndex - 1 : undefined;
  for (let reconnects = 0; !options.signal?.aborted; ) {
    const headers: Record<string, string> = {};
    if (cursor !== undefined) headers["last-event-id"] = String(cursor);
    else if (options.from === "latest" && !options.startIndex) headers["x-trigger-stream-start"] = "latest";
    if (options.timeoutInSeconds !== undefined) headers["timeout-seconds"] = String(options.timeoutInSeconds);
    try {
      const response = await http.openEventStream({ path, headers, ...(options.signal ? { signal: options.signal } : {}) });
      for await (const event of readServerSentEvents(response.body!)) {
        if (event.event !== "batch") continue;
        for (const record of recordsOfBatch(event.data)) {
          if (cursor !== undefined && record.seq <= cursor) continue;
          cursor = record.seq;
          reconnects = 0;
          yield record.data as T;
        }
      }
      // The server ended the stream: the run finished, or it was idle for the timeout.
      return;
    } catch (error) {
      if (options.signal?.aborted) return;
      // A lost connection (or a body that stopped mid-stream) resumes after the cursor; an answer of the server ends the read.
      const lost = error instanceof ApiConnectionError || !(error instanceof ApiError);
      if (!lost || ++reconnects > MAX_RECONNECTS) throw error;
    }
  }
}
