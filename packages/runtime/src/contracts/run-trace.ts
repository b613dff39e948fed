// A run's trace and events as Trigger.dev's endpoints show them (GET /api/v1/runs/{id}/trace,
// /events, /spans/{spanId}), drawn from what svc records of the run (engine/runs/run-trace.ts).
// Durations are nanoseconds, as Trigger.dev's spans count them.
import { z } from "zod";
import { NUL_FREE } from "./text.ts";

const DateTime = z.string().meta({ format: "date-time" });
const SpanId = z.string().meta({ description: "16 hex digits, the same on every read" });

export const RunSpanEvent = z.object({
  name: z.string(),
  time: DateTime,
  properties: z.record(z.string(), z.unknown()),
});

const SpanData = z.object({
  message: z.string(),
  taskSlug: z.string(),
  events: z.array(RunSpanEvent),
  startTime: DateTime,
  duration: z.number().meta({ description: "Nanoseconds; for a span under way, until now" }),
  isError: z.boolean(),
  isPartial: z.boolean().meta({ description: "The span is still under way" }),
  isCancelled: z.boolean(),
  level: z.string(),
  attemptNumber: z.number().optional(),
  properties: z.record(z.string(), z.unknown()),
});

/** One span of the trace tree with its children. */
export const RunTraceSpan = z
  .object({
    id: SpanId,
    parentId: z.string().optional(),
    runId: z.string(),
    data: SpanData,
    get children(): z.ZodArray<typeof RunTraceSpan> {
      return z.array(RunTraceSpan);
    },
  })
  .meta({ id: "RunTraceSpan", description: "A span: the run, an attempt of it, or a step, wait or run triggered in an attempt" });
export type RunTraceSpan = z.output<typeof RunTraceSpan>;

/** GET /api/v1/runs/{id}/trace without a page: the run's span as the root of a tree. */
export const RunTraceResponse = z.object({
  trace: z.object({ traceId: z.string(), rootSpan: RunTraceSpan, isTruncated: z.boolean().optional() }),
});
export type RunTraceResponse = z.output<typeof RunTraceResponse>;

/** Most spans one page of a trace holds (the SDK asks for this many). */
export const MAX_TRACE_PAGE_SIZE = 10_000;

export const RunTracePageQuery = z.object({
  "page[size]": z.coerce.number().int().min(1).max(MAX_TRACE_PAGE_SIZE).optional().meta({ description: "Spans per page; giving it (or page[after]) asks for pages" }),
  // Opaque to the caller: a span id of this trace (one it does not hold is a 400).
  "page[after]": z.string().min(1).max(512).optional().meta({ description: "The `pagination.next` of the page before" }),
});
export type RunTracePageQuery = z.output<typeof RunTracePageQuery>;

export const RunTracePageSpan = z.object({
  id: SpanId,
  parentId: z.string().optional(),
  runId: z.string(),
  message: z.string(),
  startTime: DateTime,
  duration: z.number(),
  isError: z.boolean(),
  isPartial: z.boolean(),
  isCancelled: z.boolean(),
  level: z.string(),
  attemptNumber: z.number().optional(),
});

/** GET /api/v1/runs/{id}/trace?page[size]=…: flat spans by start time, with the attempts that failed. */
export const RunTracePageResponse = z.object({
  data: z.array(RunTracePageSpan),
  attemptFailures: z.array(z.object({ spanId: z.string(), attemptNumber: z.number(), runId: z.string() })),
  pagination: z.object({ next: z.string().optional(), truncated: z.boolean().optional() }),
});
export type RunTracePageResponse = z.output<typeof RunTracePageResponse>;

/** Either answer of GET /api/v1/runs/{id}/trace: a tree, or a page when `page[size]` or `page[after]` is given. */
export const RunTraceAnswer = z.union([RunTraceResponse, RunTracePageResponse]);

export const RunSpanParams = z.object({
  runId: z.string().min(1).max(256).refine(...NUL_FREE),
  spanId: z.string().regex(/^[0-9a-f]{16}$/, "a span id is 16 hex digits"),
});

/** GET /api/v1/runs/{id}/spans/{spanId}. */
export const RunSpanDetailResponse = z.object({
  spanId: z.string(),
  parentId: z.string().nullable(),
  runId: z.string(),
  message: z.string(),
  isError: z.boolean(),
  isPartial: z.boolean(),
  isCancelled: z.boolean(),
  level: z.string(),
  startTime: DateTime,
  durationMs: z.number(),
  properties: z.record(z.string(), z.unknown()),
  events: z.array(RunSpanEvent),
  entityType: z.enum(["run", "attempt", "step", "wait", "child", "log"]),
  triggeredRuns: z.array(z.object({ runId: z.string(), taskIdentifier: z.string(), status: z.string(), createdAt: DateTime })).optional(),
});
export type RunSpanDetailResponse = z.output<typeof RunSpanDetailResponse>;

/** GET /api/v1/runs/{id}/events: the run's spans as a flat list of events, by start time. */
export const RunEventsResponse = z.object({
  events: z.array(
    z.object({
      spanId: z.string(),
      parentId: z.string().nullable(),
      runId: z.string(),
      message: z.string(),
      startTime: z.string().regex(/^[0-9]+$/).meta({ description: "Nanoseconds since the Unix epoch, as digits" }),
      duration: z.number().meta({ description: "Nanoseconds" }),
      isError: z.boolean(),
      isPartial: z.boolean(),
      isCancelled: z.boolean(),
      level: z.string(),
      kind: z.string(),
      attemptNumber: z.number().nullable(),
      taskSlug: z.string(),
      style: z.record(z.string(), z.unknown()),
      events: z.array(RunSpanEvent),
      properties: z.record(z.string(), z.unknown()),
    }),
  ),
});
export type RunEventsResponse = z.output<typeof RunEventsResponse>;
