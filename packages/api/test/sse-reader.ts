/** A record of an SSE `event: batch` as the SDK parses it. */
export interface SseRecord {
  seq_num: number;
  timestamp: number;
  headers: [string, string][];
  body: string;
}

/**
 * Reads an SSE response frame by frame as it arrives; `parse` turns a frame (the text between two
 * blank lines) into the items it carries. `next(n)` resolves with the next n items; `ended`
 * resolves when the server ends the stream.
 */
export function sseItems<T>(response: Response, parse: (frame: string) => T[]) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const items: T[] = [];
  const waiters: { count: number; resolve: (items: T[]) => void }[] = [];
  let buffer = "";
  const settle = () => {
    while (waiters.length > 0 && items.length >= waiters[0]!.count) {
      const w = waiters.shift()!;
      w.resolve(items.splice(0, w.count));
    }
  };
  const ended = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        items.push(...parse(frame));
      }
      settle();
    }
  })();
  return {
    next(count = 1): Promise<T[]> {
      return new Promise((resolve) => {
        waiters.push({ count, resolve });
        settle();
      });
    },
    ended,
    /** Items received and not yet taken by next(). */
    get pending() {
      return items.length;
    },
    cancel: () => reader.cancel(),
  };
}

/**
 * Reads an SSE response's `event: batch` records as they arrive (the realtime session channels).
 * `comments` counts comment frames (heartbeats).
 */
export function sseRecords(response: Response) {
  let comments = 0;
  const items = sseItems<SseRecord>(response, (frame) => {
    if (frame.startsWith(":")) comments++;
    const name = /^event: (.*)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1];
    return name === "batch" && data ? (JSON.parse(data).records as SseRecord[]) : [];
  });
  return {
    next: items.next,
    ended: items.ended,
    cancel: items.cancel,
    get comments() {
      return comments;
    },
    get pending() {
      return items.pending;
    },
  };
}

/** The `{data, id}` envelope of a data record's body. */
export function envelope(record: SseRecord): { data: unknown; id: string } {
  return JSON.parse(record.body);
}
