import { describe, expect, it } from "vitest";
import { packetAsJson } from "./packet-json.ts";

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
