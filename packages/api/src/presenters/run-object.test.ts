import { describe, expect, it } from "vitest";
import { packetAsJson } from "./packet-json.ts";
import { presentRunError } from "./run-object.ts";

describe("presentRunError", () => {
  it("maps stored user and internal errors to Trigger.dev's SerializedError", () => {
    expect(presentRunError({ type: "user", name: "TypeError", message: "boom", stack: "at x" })).toEqual({ name: "TypeError", message: "boom", stackTrace: "at x" });
    expect(presentRunError({ type: "internal", code: "MAX_DURATION_EXCEEDED" })).toEqual({ name: "MAX_DURATION_EXCEEDED", message: "MAX_DURATION_EXCEEDED" });
    expect(presentRunError("plain")).toEqual({ message: "plain" });
    expect(presentRunError(null)).toBeUndefined();
    expect(presentRunError({})).toEqual({ message: "Unknown error" });
  });
});

describe("packetAsJson", () => {
  it("returns plain JSON values: superjson keeps only its json part", () => {
    const superjson = JSON.stringify({ json: { at: "2025-01-01T00:00:00.000Z", n: "5" }, meta: { values: { at: ["Date"], n: ["bigint"] } } });
    expect(packetAsJson({ data: superjson, type: "application/super+json" })).toEqual({ at: "2025-01-01T00:00:00.000Z", n: "5" });
    expect(packetAsJson({ data: '{"a":1}', type: "application/json" })).toEqual({ a: 1 });
    expect(packetAsJson({ data: "hello", type: "text/plain" })).toBe("hello");
    expect(packetAsJson({ data: null, type: "application/json" })).toBeUndefined();
  });

  it("returns unparseable text as is instead of failing", () => {
    expect(packetAsJson({ data: "{broken", type: "application/json" })).toBe("{broken");
  });
});
