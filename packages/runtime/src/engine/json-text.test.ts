import { describe, expect, it } from "vitest";
import { jsonNestingExceeds, MAX_JSON_DEPTH, parseJsonText } from "./json-text.ts";

const nested = (levels: number, open = "[", close = "]") => open.repeat(levels) + close.repeat(levels);

describe("jsonNestingExceeds", () => {
  it("accepts nesting up to the limit and refuses one level more", () => {
    expect(jsonNestingExceeds(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonNestingExceeds(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonNestingExceeds(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).toBe(false);
    expect(jsonNestingExceeds(`{"a":${nested(MAX_JSON_DEPTH)}}`)).toBe(true);
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const brackets = JSON.stringify({ s: "[".repeat(10_000) + '\\"' + "{".repeat(10_000) });
    expect(jsonNestingExceeds(brackets)).toBe(false);
    expect(jsonNestingExceeds(`["\\\\", ${nested(MAX_JSON_DEPTH)}]`)).toBe(true);
  });

  it("scans a million levels without recursion", () => {
    expect(jsonNestingExceeds(nested(1_000_000, "{\"a\":", "}"))).toBe(true);
  });
});

describe("parseJsonText", () => {
  it("parses, and names the text in its errors", () => {
    expect(parseJsonText('{"a":[1]}', "body")).toEqual({ a: [1] });
    expect(() => parseJsonText("{nope", "line 2")).toThrow("line 2: not valid JSON");
    expect(() => parseJsonText(nested(5000), "Request body")).toThrow(`Request body: JSON is nested more than ${MAX_JSON_DEPTH} levels deep`);
  });
});
