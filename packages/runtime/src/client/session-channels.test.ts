import { describe, expect, it } from "vitest";
import { ApiResponseError } from "./errors.ts";
import { controlSubtype, parseRecordData, recordsOfBatch } from "./session-channels.ts";

describe("recordsOfBatch", () => {
  it("unwraps each record's {data, id} body, keeps headers only when there are some", () => {
    const batch = JSON.stringify({
      records: [
        { seq_num: 1, timestamp: 1, headers: [], body: JSON.stringify({ data: '{"text":"hi"}', id: "p1" }) },
        { seq_num: 2, timestamp: 2, headers: [["x", "y"]], body: JSON.stringify({ data: { n: 2 }, id: "p2" }) },
      ],
    });
    expect(recordsOfBatch(batch)).toEqual([
      { seq: 1, id: "p1", data: '{"text":"hi"}' },
      { seq: 2, id: "p2", data: { n: 2 }, headers: [["x", "y"]] },
    ]);
  });

  it("reads an empty body as a control record and skips stream commands (first header name empty)", () => {
    const batch = JSON.stringify({
      records: [
        { seq_num: 3, timestamp: 3, headers: [["trigger-control", "turn-complete"]], body: "" },
        { seq_num: 4, timestamp: 4, headers: [["", "trim"]], body: "" },
      ],
    });
    const records = recordsOfBatch(batch);
    expect(records).toEqual([{ seq: 3, id: "", data: null, headers: [["trigger-control", "turn-complete"]] }]);
    expect(controlSubtype(records[0]!)).toBe("turn-complete");
  });

  it("refuses a frame that is not the server's shape with an ApiResponseError", () => {
    expect(() => recordsOfBatch("not json")).toThrow(ApiResponseError);
    expect(() => recordsOfBatch(JSON.stringify({ records: [{ body: "" }] }))).toThrow(/seq_num/);
    expect(() => recordsOfBatch(JSON.stringify({ records: [{ seq_num: 1, body: "{" }] }))).toThrow(/record 1/);
  });
});

describe("parseRecordData", () => {
  it("parses a string that is JSON text and returns anything else as it is", () => {
    expect(parseRecordData('{"text":"hi"}')).toEqual({ text: "hi" });
    expect(parseRecordData("plain words")).toBe("plain words");
    expect(parseRecordData("42")).toBe(42);
    expect(parseRecordData({ already: "parsed" })).toEqual({ already: "parsed" });
    expect(parseRecordData(null)).toBeNull();
  });
});

describe("controlSubtype", () => {
  it("is undefined for a data record, even one with a trigger-control header", () => {
    expect(controlSubtype({ data: "x", headers: [["trigger-control", "turn-complete"]] })).toBeUndefined();
    expect(controlSubtype({ data: null })).toBeUndefined();
  });
});
