/** A record of an SSE `event: batch` as the SDK parses it. */
export interface SseRecord {
  seq_num: number;
  timestamp: number;
  headers: [string, string][];
  body: string;
}

/**
 * Reads an SSE response's `event: batch` records as they arrive. `next(n)` resolves with the next
 * n records; `ended` resolves when the server ends the stream.
 */
export function sseRecords(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const records: SseRecord[] = [];
  const waiters: { count: number; resolve: (r: SseRecord[]) => void }[] = [];
  let buffer = "";
  let comments = 0;
  const settle = () => {
    while (waiters.length > 0 && records.length >= waiters[0]!.count) {
      const w = waiters.shift()!;
      w.resolve(records.splice(0, w.count));
    }
  };
  const ended = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (event.startsWith(":")) comments++;
        const name = /^event: (.*)$/m.exec(event)?.[1];
        const data = /^data: (.*)$/m.exec(event)?.[1];
        if (name === "batch" && data) records.push(...(JSON.parse(data).records as SseRecord[]));
      }
      settle();
    }
  })();
  return {
    next(count = 1): Promise<SseRecord[]> {
      return new Promise((resolve) => {
        waiters.push({ count, resolve });
        settle();
      });
    },
    ended,
    get comments() {
      return comments;
    },
    /** Records received and not yet taken by next(). */
    get pending() {
      return records.length;
    },
    cancel: () => reader.cancel(),
  };
}

/** The `{data, id}` envelope of a data record's body. */
export function envelope(record: SseRecord): { data: unknown; id: string } {
  return JSON.parse(record.body);
}
