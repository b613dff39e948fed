import { describe, expect, it } from "vitest";
import { EventParser, readServerSentEvents } from "./event-stream.ts";

function parseAll(chunks: string[]) {
  const parser = new EventParser();
  return [...chunks.flatMap((chunk) => parser.push(chunk, false)), ...parser.push("", true)];
}

describe("EventParser", () => {
  it("dispatches an event at a blank line with its name, joined data lines and id", () => {
    expect(parseAll(["event: batch\nid: 7\ndata: {\"a\":1}\ndata: two\n\n"])).toEqual([{ event: "batch", id: "7", data: '{"a":1}\ntwo' }]);
  });

  it("reads CRLF, LF and CR line ends, also when a CRLF is split between chunks", () => {
    expect(parseAll(["data: a\r", "\n\r", "\ndata: b\r\rdata: c\n\n"])).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
      { event: "message", data: "c" },
    ]);
  });

  it("skips comments and events without data, and drops an event the stream cut off", () => {
    expect(parseAll([": ping\n\n", "event: batch\n\n", "data: kept\n\n", "data: cut"])).toEqual([{ event: "message", data: "kept" }]);
  });

  it("takes a field without a colon as empty, strips one space after the colon only", () => {
    expect(parseAll(["data\ndata:  x\n\n"])).toEqual([{ event: "message", data: "\n x" }]);
  });
});

describe("readServerSentEvents", () => {
  it("yields the events of a byte stream whose UTF-8 characters are split between chunks", async () => {
    const bytes = new TextEncoder().encode("data: é\n\n: ping\n\nevent: batch\ndata: ü\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.slice(i, i + 3));
        controller.close();
      },
    });
    const events = [];
    for await (const event of readServerSentEvents(body)) events.push(event);
    expect(events).toEqual([{ event: "message", data: "é" }, { event: "batch", data: "ü" }]);
  });

  it("cancels the body when the reader stops early", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("data: 1\n\ndata: 2\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const event of readServerSentEvents(body)) {
      expect(event.data).toBe("1");
      break;
    }
    expect(cancelled).toBe(true);
  });
});
