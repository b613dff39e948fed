import { describe, expect, it } from "vitest";
import { parseBatchItemLines } from "./ndjson.ts";

describe("parseBatchItemLines", () => {
  it("parses one item per line and skips blank lines", () => {
    const text = '{"index":0,"task":"a","payload":"{}"}\n\n  {"index":1,"task":"b","options":{"tags":["t"]}}  \n';
    expect(parseBatchItemLines(text)).toEqual([
      { index: 0, task: "a", payload: "{}" },
      { index: 1, task: "b", options: { tags: ["t"] } },
    ]);
  });

  it("names the 1-based line of the first bad item", () => {
    expect(() => parseBatchItemLines('{"index":0,"task":"a"}\n{oops')).toThrow(/^line 2: not valid JSON$/);
    expect(() => parseBatchItemLines('\n\n{"index":"0","task":"a"}')).toThrow(/^line 3: index: /);
    expect(() => parseBatchItemLines('{"index":0,"task":""}')).toThrow(/^line 1: task: /);
  });
});
