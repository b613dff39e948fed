// A finished run as Trigger.dev's TaskRunExecutionResult (contracts/run-results.ts), which the
// SDK's getRunResult and getBatchResults validate: its error must be one of the SDK's error types.
import type { RunResultRow } from "@svc/runtime/engine";
import { RUN_RESULT_ERROR_CODES, type RunResult, type RunResultError } from "@svc/runtime/contracts";

type ResultCode = (typeof RUN_RESULT_ERROR_CODES)[number];

/** svc's internal error codes that have a Trigger.dev counterpart the SDK knows. */
const TRIGGER_CODES: Record<string, ResultCode> = {
  MAX_DURATION_EXCEEDED: "MAX_DURATION_EXCEEDED",
  WORKER_CRASHED: "TASK_RUN_CRASHED",
};

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/**
 * A stored run error (`{type:'user', name, message, stackTrace}` or `{type:'internal', code, message}`)
 * as a TaskRunError: what task code threw as BUILT_IN_ERROR, svc's own as INTERNAL_ERROR when the
 * SDK knows its code, else as BUILT_IN_ERROR named by the code.
 */
export function presentResultError(error: unknown, status: string): RunResultError {
  if (status === "CANCELED") return { type: "INTERNAL_ERROR", code: "TASK_RUN_CANCELLED", message: "The run was canceled" };
  if (error === null || error === undefined) {
    const message = status === "EXPIRED" ? "The run expired: it was not started within its TTL" : `The run ended ${status}`;
    return { type: "INTERNAL_ERROR", code: "UNSPECIFIED_ERROR", message };
  }
  if (typeof error !== "object") return { type: "BUILT_IN_ERROR", name: "Error", message: String(error), stackTrace: "" };
  const e = error as Record<string, unknown>;
  const code = text(e.code);
  if (e.type === "internal" && code && TRIGGER_CODES[code]) {
    return { type: "INTERNAL_ERROR", code: TRIGGER_CODES[code], ...(text(e.message) ? { message: text(e.message) } : {}) };
  }
  return {
    type: "BUILT_IN_ERROR",
    name: text(e.name) ?? code ?? "Error",
    message: text(e.message) ?? code ?? "Unknown error",
    stackTrace: text(e.stackTrace) ?? text(e.stack) ?? "",
  };
}

export function presentRunResult(run: RunResultRow): RunResult {
  if (run.status === "COMPLETED") {
    return { ok: true, id: run.id, taskIdentifier: run.task_identifier, ...(run.output !== null ? { output: run.output } : {}), outputType: run.output_type ?? "application/json" };
  }
  return { ok: false, id: run.id, taskIdentifier: run.task_identifier, error: presentResultError(run.error, run.status) };
}
