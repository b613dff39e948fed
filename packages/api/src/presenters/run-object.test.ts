import { describe, expect, it } from "vitest";
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
