import { describe, expect, it } from "vitest";
import { matchesExpected } from "./expected-output.ts";

describe("expected output in the docs", () => {
  it("matches the exact text, with … standing for any text", () => {
    expect(matchesExpected('{"id":"run_abc","isCached":false}\n', '{"id":"run_…","isCached":false}')).toBe(true);
    expect(matchesExpected('{"id":"run_abc","isCached":true}', '{"id":"run_…","isCached":false}')).toBe(false);
    expect(matchesExpected('{"id":"batch_abc","isCached":false}', '{"id":"run_…","isCached":false}')).toBe(false);
    expect(matchesExpected("COMPLETED { greeting: 'Hello, Ada!', runId: 'run_x', attempt: 1 }", "COMPLETED { greeting: 'Hello, Ada!', … }")).toBe(true);
  });

  it("lets … next to a comma stand for nothing, the comma included", () => {
    const expected = '{"status":"WAITING",…,"tags":["a"],…}';
    expect(matchesExpected('{"status":"WAITING","tags":["a"]}', expected)).toBe(true);
    expect(matchesExpected('{"status":"WAITING","url":"u","tags":["a"],"createdAt":"x"}', expected)).toBe(true);
    expect(matchesExpected('{"output":1}', "{…,\"output\":1}")).toBe(true);
    expect(matchesExpected('{"a":0,"output":1}', "{…,\"output\":1}")).toBe(true);
    expect(matchesExpected('{"status":"FAILED","tags":["a"]}', expected)).toBe(false);
  });

  it("ignores whitespace around JSON punctuation, so pretty-printed JSON matches a one-line expectation", () => {
    expect(matchesExpected('{\n  "projectRef": "proj_1",\n  "environments": {\n    "dev": {}\n  }\n}', '{ "projectRef": "proj_…", "environments": { … } }')).toBe(true);
  });

  it("matches an expected HTTP status with the body", () => {
    expect(matchesExpected('401 {"error":"Invalid URL, hash doesn\'t match"}', '401 {"error":"Invalid URL, hash doesn\'t match"}')).toBe(true);
    expect(matchesExpected('404 {"error":"x"}', '401 {"error":"x"}')).toBe(false);
  });
});
