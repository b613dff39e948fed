import type { RealtimeRunRow, RunStatus } from "@svc/runtime/engine";
import { presentRunError } from "../presenters/run-object.ts";
import { wireTextArray, wireTimestamp, type WireRow } from "./shape-wire.ts";

/**
 * svc's run statuses as Trigger.dev's TaskRunStatus names, the column the SDK maps back
 * (`apiStatusFromRunStatus`: COMPLETED_SUCCESSFULLY → COMPLETED, COMPLETED_WITH_ERRORS → FAILED,
 * WAITING_TO_RESUME → WAITING; a name it does not know reads as QUEUED).
 */
const TASK_RUN_STATUS: Record<RunStatus, string> = {
  PENDING_VERSION: "PENDING_VERSION",
  QUEUED: "PENDING",
  DEQUEUED: "DEQUEUED",
  EXECUTING: "EXECUTING",
  WAITING: "WAITING_TO_RESUME",
  COMPLETED: "COMPLETED_SUCCESSFULLY",
  CANCELED: "CANCELED",
  FAILED: "COMPLETED_WITH_ERRORS",
  CRASHED: "CRASHED",
  SYSTEM_FAILURE: "SYSTEM_FAILURE",
  DELAYED: "DELAYED",
  EXPIRED: "EXPIRED",
  TIMED_OUT: "TIMED_OUT",
};

/**
 * The run as a shape row. svc has no run number or cost: 0, as
 * the SDK expects. `legacyStatuses` (a client that sent no x-trigger-api-version) shows DEQUEUED
 * as EXECUTING, which SDKs before DEQUEUED existed know.
 */
export function runShapeRow(run: RealtimeRunRow, options: { legacyStatuses: boolean }): WireRow {
  const status = options.legacyStatuses && run.status === "DEQUEUED" ? "EXECUTING" : TASK_RUN_STATUS[run.status];
  const durationMs = run.started_at && run.finished_at ? Math.max(0, run.finished_at.getTime() - run.started_at.getTime()) : 0;
  const metadata = run.metadata === null || run.metadata === undefined ? null : JSON.stringify(run.metadata);
  const error = presentRunError(run.error);
  return {
    id: run.id,
    friendlyId: run.id,
    taskIdentifier: run.task_identifier,
    status,
    createdAt: wireTimestamp(run.created_at),
    updatedAt: wireTimestamp(run.updated_at),
    startedAt: wireTimestamp(run.started_at),
    delayUntil: wireTimestamp(run.delay_until),
    queuedAt: null,
    expiredAt: wireTimestamp(run.expired_at),
    completedAt: wireTimestamp(run.finished_at),
    idempotencyKey: run.idempotency_key_user ?? run.idempotency_key,
    number: "0",
    isTest: run.is_test ? "t" : "f",
    usageDurationMs: String(Math.min(durationMs, 2_147_483_647)),
    costInCents: "0",
    baseCostInCents: "0",
    ttl: run.ttl,
    payload: run.payload,
    payloadType: run.payload === null ? null : run.payload_type,
    metadata,
    metadataType: metadata === null ? null : "application/json",
    output: run.output,
    outputType: run.output === null ? null : (run.output_type ?? "application/json"),
    runTags: run.tags.length > 0 ? wireTextArray([...run.tags].sort()) : null,
    // Trigger.dev's TaskRunError: a built-in error is the shape every svc error fits.
    error: error ? JSON.stringify({ type: "BUILT_IN_ERROR", name: error.name ?? "Error", message: error.message, stackTrace: error.stackTrace ?? "" }) : null,
    realtimeStreams: run.realtime_streams && run.realtime_streams.length > 0 ? wireTextArray(run.realtime_streams) : "{}",
  };
}
