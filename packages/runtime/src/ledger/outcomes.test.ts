import { describe, expect, it } from "vitest";
import { childOutcome } from "../engine/runs/notify-waiters.ts";
import { StoredDataError, WaitOutcomeSchema, parseStored } from "./outcomes.ts";

describe("stored data validation", () => {
  it("passes what svc writes and names the field of what it does not", () => {
    expect(parseStored(WaitOutcomeSchema, { ok: false, error: { message: "m", extra: 1 } }, "x")).toEqual({ ok: false, error: { message: "m", extra: 1 } });
    expect(() => parseStored(WaitOutcomeSchema, { ok: "yes" }, "a wait's outcome")).toThrow(/a wait's outcome does not have the shape svc stores: ok: /);
    expect(() => parseStored(WaitOutcomeSchema, { ok: true, output: 5 }, "x")).toThrow(StoredDataError);
  });

  it("reads a child run's stored error for its waiter, and refuses one of another shape", () => {
    const run = { id: "run_1", status: "FAILED" as const, output: null, output_type: null };
    expect(childOutcome({ ...run, error: { type: "user", name: "TypeError", message: "boom", stackTrace: "…" } })).toEqual({
      ok: false, runId: "run_1", error: { name: "TypeError", message: "boom", code: "FAILED" },
    });
    expect(childOutcome({ ...run, status: "CANCELED", error: null })).toMatchObject({ error: { name: "Error", message: "child run ended CANCELED" } });
    expect(() => childOutcome({ ...run, error: { message: 42 } })).toThrow(/the error of run run_1 does not have the shape svc stores: message: /);
  });
});
