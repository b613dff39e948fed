// A run's trace (engine/runs/run-trace.ts) in the shapes of Trigger.dev's trace, trace page,
// span and events endpoints (contracts/run-trace.ts).
import { NotFoundError, ValidationError, type RunSpan, type RunTrace } from "@svc/runtime/engine";
import type { RunEventsResponse, RunSpanDetailResponse, RunTracePageResponse, RunTraceResponse, RunTraceSpan } from "@svc/runtime/contracts";

/** A span's level: a log line's own (INFO, WARN …), else TRACE (a whole span), as Trigger.dev's events have them. */
const levelOf = (span: RunSpan) => span.level ?? "TRACE";

function events(span: RunSpan) {
  return span.events.map((e) => ({ name: e.name, time: e.time.toISOString(), properties: e.properties }));
}

/** GET /api/v1/runs/{id}/trace: the run's span with its attempts, and under each what happened in it. */
export function presentRunTrace(trace: RunTrace): RunTraceResponse {
  const nodes = new Map<string, RunTraceSpan>();
  for (const span of trace.spans) {
    nodes.set(span.id, {
      id: span.id,
      ...(span.parentId ? { parentId: span.parentId } : {}),
      runId: span.runId,
      data: {
        message: span.message,
        taskSlug: trace.taskIdentifier,
        events: events(span),
        startTime: span.startTime.toISOString(),
        duration: span.durationNs,
        isError: span.isError,
        isPartial: span.isPartial,
        isCancelled: span.isCancelled,
        level: levelOf(span),
        ...(span.attemptNumber !== undefined ? { attemptNumber: span.attemptNumber } : {}),
        properties: span.properties,
      },
      children: [],
    });
  }
  // Spans are in start order, so each parent's children are too.
  for (const span of trace.spans) if (span.parentId) nodes.get(span.parentId)!.children.push(nodes.get(span.id)!);
  return { trace: { traceId: trace.traceId, rootSpan: nodes.get(trace.spans[0]!.id)!, ...(trace.truncated ? { isTruncated: true } : {}) } };
}

/**
 * GET /api/v1/runs/{id}/trace?page[size]=…: `size` spans by start time after the span `after`
 * (the `next` of the page before), and the failed attempts among them.
 */
export function presentRunTracePage(trace: RunTrace, size: number, after: string | undefined): RunTracePageResponse {
  let start = 0;
  if (after !== undefined) {
    const index = trace.spans.findIndex((s) => s.id === after);
    if (index < 0) throw new ValidationError(`page[after]: ${after} is not a span of this run's trace`);
    start = index + 1;
  }
  const page = trace.spans.slice(start, start + size);
  const more = start + size < trace.spans.length;
  return {
    data: page.map((span) => ({
      id: span.id,
      ...(span.parentId ? { parentId: span.parentId } : {}),
      runId: span.runId,
      message: span.message,
      startTime: span.startTime.toISOString(),
      duration: span.durationNs,
      isError: span.isError,
      isPartial: span.isPartial,
      isCancelled: span.isCancelled,
      level: levelOf(span),
      ...(span.attemptNumber !== undefined ? { attemptNumber: span.attemptNumber } : {}),
    })),
    attemptFailures: page
      .filter((span) => span.entity === "attempt" && span.isError && span.attemptNumber !== undefined)
      .map((span) => ({ spanId: span.id, attemptNumber: span.attemptNumber!, runId: span.runId })),
    pagination: { ...(more ? { next: page.at(-1)!.id } : {}), ...(trace.truncated ? { truncated: true } : {}) },
  };
}

/** GET /api/v1/runs/{id}/spans/{spanId}: one span with its properties and events. */
export function presentRunSpan(trace: RunTrace, spanId: string): RunSpanDetailResponse {
  const span = trace.spans.find((s) => s.id === spanId);
  if (!span) throw new NotFoundError("Span not found");
  const detail: RunSpanDetailResponse = {
    spanId: span.id,
    parentId: span.parentId,
    runId: span.runId,
    message: span.message,
    isError: span.isError,
    isPartial: span.isPartial,
    isCancelled: span.isCancelled,
    level: levelOf(span),
    startTime: span.startTime.toISOString(),
    durationMs: span.durationNs / 1_000_000,
    properties: span.properties,
    events: events(span),
    entityType: span.entity,
  };
  if (span.entity === "child") {
    const p = span.properties;
    detail.triggeredRuns = [{ runId: String(p.runId), taskIdentifier: String(p.taskIdentifier), status: String(p.status), createdAt: span.startTime.toISOString() }];
  }
  return detail;
}

/** GET /api/v1/runs/{id}/events: every span of the run as an event, by start time (times in nanoseconds). */
export function presentRunEvents(trace: RunTrace): RunEventsResponse {
  return {
    events: trace.spans.map((span) => ({
      spanId: span.id,
      parentId: span.parentId,
      runId: span.runId,
      message: span.message,
      startTime: (BigInt(span.startTime.getTime()) * 1_000_000n).toString(),
      duration: span.durationNs,
      isError: span.isError,
      isPartial: span.isPartial,
      isCancelled: span.isCancelled,
      level: levelOf(span),
      kind: span.entity === "log" ? "LOG" : "INTERNAL",
      attemptNumber: span.attemptNumber ?? null,
      taskSlug: trace.taskIdentifier,
      style: {},
      events: events(span),
      properties: span.properties,
    })),
  };
}
