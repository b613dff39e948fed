import type { RetrieveRunResponse, RunSchedule } from "@svc/runtime/contracts";
import type { RunDetail, RunScheduleRef } from "@svc/runtime/engine";
import { packetAsJson } from "./packet-json.ts";
import { presentRelatedRun, presentRunError } from "./run-object.ts";
import { presentWaitingFor } from "./waiting-for.ts";

/** GET /api/v3/runs/{id}: a run with its payload, output or error, schedule, relatives and what it waits on. */
export function presentRetrievedRun(detail: RunDetail): RetrieveRunResponse {
  const { run } = detail;
  const relatedRuns: RetrieveRunResponse["relatedRuns"] = {};
  if (detail.parent) relatedRuns.parent = presentRelatedRun(detail.parent);
  if (detail.root) relatedRuns.root = presentRelatedRun(detail.root);
  relatedRuns.children = detail.children.map(presentRelatedRun);
  const result: RetrieveRunResponse = { ...presentRelatedRun(run), relatedRuns, attemptCount: run.attempt_number, attempts: [], waitingFor: presentWaitingFor(detail.waitingFor) };
  const payload = detail.payload.inline ? packetAsJson(detail.payload.inline) : undefined;
  if (detail.payload.url) result.payloadPresignedUrl = detail.payload.url;
  else if (payload !== undefined) result.payload = payload;
  const output = detail.output.inline ? packetAsJson(detail.output.inline) : undefined;
  if (detail.output.url) result.outputPresignedUrl = detail.output.url;
  else if (output !== undefined) result.output = output;
  const error = presentRunError(run.error);
  if (error) result.error = error;
  if (detail.schedule) result.schedule = presentSchedule(detail.schedule);
  return result;
}

function presentSchedule(ref: RunScheduleRef): RunSchedule {
  const schedule: RunSchedule = { id: ref.id, generator: { type: "CRON", expression: ref.expression, description: ref.description } };
  if (ref.externalId) schedule.externalId = ref.externalId;
  if (ref.deduplicationKey) schedule.deduplicationKey = ref.deduplicationKey;
  return schedule;
}
