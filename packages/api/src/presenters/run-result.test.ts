import { describe, expect, it } from "vitest";
import { RunResult } from "@svc/runtime/contracts";
import { presentResultError, presentRunResult } from "./run-result.ts";

describe("presentRunResult", () => {
  it("shows a COMPLETED run's output as stored, and any other's error in the shape the contract (and the SDK) take", () => {
    const done = presentRunResult({ id: "run_1", task_identifier: "t", status: "COMPLETED", output: '{"json":1}', output_type: "application/super+json", error: null });
    expect(done).toEqual({ ok: true, id: "run_1", taskIdentifier: "t", output: '{"json":1}', outputType: "application/super+json" });
    const failed = presentRunResult({ id: "run_2", task_identifier: "t", status: "FAILED", output: null, output_type: null, error: { type: "user", name: "E", message: "m" } });
    expect(failed).toEqual({ ok: false, id: "run_2", taskIdentifier: "t", error: { type: "BUILT_IN_ERROR", name: "E", message: "m", stackTrace: "" } });
    for (const result of [done, failed]) expect(RunResult.parse(result)).toEqual(result);
  });
});

describe("presentResultError", () => {
  it("maps svc's codes the SDK knows to INTERNAL_ERROR and names the others", () => {
    expect(presentResultError(null, "CANCELED")).toEqual({ type: "INTERNAL_ERROR", code: "TASK_RUN_CANCELLED", message: "The run was canceled" });
    expect(presentResultError({ type: "internal", code: "WORKER_CRASHED", message: "gone" }, "CRASHED")).toEqual({ type: "INTERNAL_ERROR", code: "TASK_RUN_CRASHED", message: "gone" });
    expect(presentResultError({ type: "internal", code: "NONDETERMINISM", name: "NondeterminismError", message: "m" }, "FAILED")).toEqual({
      type: "BUILT_IN_ERROR", name: "NondeterminismError", message: "m", stackTrace: "",
    });
    expect(presentResultError({ type: "internal", code: "OUTPUT_UNSERIALIZABLE" }, "FAILED")).toEqual({ type: "BUILT_IN_ERROR", name: "OUTPUT_UNSERIALIZABLE", message: "OUTPUT_UNSERIALIZABLE", stackTrace: "" });
    expect(presentResultError("plain", "FAILED")).toEqual({ type: "BUILT_IN_ERROR", name: "Error", message: "plain", stackTrace: "" });
    expect(presentResultError(null, "SYSTEM_FAILURE")).toEqual({ type: "INTERNAL_ERROR", code: "UNSPECIFIED_ERROR", message: "The run ended SYSTEM_FAILURE" });
  });
});
