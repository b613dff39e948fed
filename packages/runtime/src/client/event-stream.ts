// Reading a server-sent event stream (text/event-stream) into events, as the WHATWG parsing rules
// say: lines end in CRLF, LF or CR; a blank line ends an event; `:` starts a comment.

/** One dispatched event. */
export interface ServerSentEvent {
  /** The `event:` field. @default "message" */
  event: string;
  /** The `data:` lines joined by "\n". */
  data: string;
  /** The `id:` field, when the event had one. */
  id?: string;
}

/**
 * The events of a stream body as they arrive. Comments (heartbeats) and events without data are
 * skipped. Stopping the iteration early cancels the body.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        // An event not ended by a blank line is dropped, as a browser drops it.
        yield* parser.push("", true);
        return;
      }
      yield* parser.push(value, false);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** The line-and-field state between chunks; pure, so it is tested with plain strings. */
export class EventParser {
  #buffer = "";
  #data: string[] = [];
  #event = "";
  #id: string | undefined;

  /** Feeds a chunk of text; returns the events it completes. `end` flushes the last line. */
  push(chunk: string, end: boolean): ServerSentEvent[] {
    this.#buffer += chunk;
    const events: ServerSentEvent[] = [];
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.#buffer);
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (!match || (match[0] === "\r" && match.index === this.#buffer.length - 1 && !end)) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      const event = this.#line(line);
      if (event) events.push(event);
    }
    if (end) this.#buffer = "";
    return events;
  }

  #line(line: string): ServerSentEvent | undefined {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.#id = value;
    return undefined;
  }

  #dispatch(): ServerSentEvent | undefined {
    const data = this.#data;
    const event = this.#event || "message";
    const id = this.#id;
    this.#data = [];
    this.#event = "";
    if (data.length === 0) return undefined;
    return { event, data: data.join("\n"), ...(id !== undefined ? { id } : {}) };
  }
}
