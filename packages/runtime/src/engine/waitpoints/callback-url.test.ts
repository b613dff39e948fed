import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { callbackHash, callbackHashMatches, callbackUrl } from "./callback-url.ts";

describe("callback URLs", () => {
  it("signs the id without its waitpoint_ prefix, as Trigger.dev does", () => {
    const expected = createHmac("sha256", "svc_dev_key").update("abc123").digest("hex");
    expect(callbackHash("svc_dev_key", "waitpoint_abc123")).toBe(expected);
    expect(callbackUrl("https://svc.example.com/", "waitpoint_abc123", "svc_dev_key")).toBe(
      `https://svc.example.com/api/v1/waitpoints/tokens/waitpoint_abc123/callback/${expected}`,
    );
  });

  it("accepts a hash made with any active key and nothing else", () => {
    const hash = callbackHash("old-key", "waitpoint_x");
    expect(callbackHashMatches(["new-key", "old-key"], "waitpoint_x", hash)).toBe(true);
    expect(callbackHashMatches(["new-key", "old-key"], "waitpoint_x", hash.toUpperCase())).toBe(true);
    expect(callbackHashMatches(["new-key"], "waitpoint_x", hash)).toBe(false);
    expect(callbackHashMatches(["old-key"], "waitpoint_y", hash)).toBe(false);
    expect(callbackHashMatches(["old-key"], "waitpoint_x", hash.slice(0, 63))).toBe(false);
    expect(callbackHashMatches(["old-key"], "waitpoint_x", "z".repeat(64))).toBe(false);
    expect(callbackHashMatches([], "waitpoint_x", hash)).toBe(false);
  });
});
