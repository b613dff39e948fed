import { createHash } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { runTimeline, type RunTimeline, type TimelineEntry } from "./timeline.ts";
import { placeLogs } from "./timeline-tree.ts";

// A run's trace as Trigger.dev's trace and event endpoints show one, drawn from what svc records
// of the run (timeline.ts: its attempts, the steps and waits of its ledger, the runs it
// triggered), not from stored OpenTelemetry spans: svc keeps none (traces.md exports them). One
// span for the run, one per attempt under it, and one per step, wait and child run under the
// attempt it happened in.

/** An event on a span: a failed attempt's or step's exception, as OpenTelemetry names it. */
export interface RunSpanEvent {
  name: "exception";
  time: Date;
  properties: { exception: { type?: string; message: string } };
}

export interface RunSpan {
  /** 16 hex digits, the same on every read (derived from the run and what the span stands for). */
  id: string;
  parentId: string | null;
  runId: string;
  /** What the span stands for: the run, an attempt, a step, a wait, a run it triggered, a line it logged. */
  entity: "run" | TimelineEntry["kind"] | "log";
  /** A log line's level as Trigger.dev names them (DEBUG, LOG, INFO, WARN, ERROR); spans have none. */
  level?: string;
  message: string;
  startTime: Date;
  /** Nanoseconds, as Trigger.dev's spans count them; for a span under way, until `now`. */
  durationNs: number;
  isError: boolean;
  /** Still under way. */
  isPartial: boolean;
  isCancelled: boolean;
  /** The attempt the span happened in. */
  attemptNumber?: number;
  properties: Record<string, unknown>;
  events: RunSpanEvent[];
}

export interface RunTrace {
  traceId: string;
  taskIdentifier: string;
  /** The run's span first, then by start time. */
  spans: RunSpan[];
  /** The run recorded more than MAX_TIMELINE_ENTRIES entries: the spans are those of the first ones. */
  truncated: boolean;
}

const ERROR_STATUSES: readonly string[] = ["FAILED", "CRASHED", "SYSTEM_FAILURE", "TIMED_OUT", "EXPIRED"];

function hex(text: string, digits: number): string {
  return createHash("sha256").update(text).digest("hex").slice(0, digits);
}

/** The run's span id, and the id of the span an entry of its timeline stands for. */
export function spanIdOf(runId: string, what: string): string {
  return hex(`${runId}\n${what}`, 16);
}

function entryKey(entry: TimelineEntry): string {
  switch (entry.kind) {
    case "attempt":
      return `attempt:${entry.detail.number}`;
    case "step":
    case "wait":
      return `${entry.kind}:${entry.detail.epoch}:${entry.detail.stepKey}`;
    case "child":
      return `child:${entry.detail.runId}`;
  }
}

/**
 * The trace id: the run's OpenTelemetry trace when traces are on (its stored traceparent), else
 * one derived from the root run, so that a run and the runs it triggered share it either way.
 */
export function traceIdOf(traceparent: string | null, rootRunId: string): string {
  const match = traceparent ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent) : null;
  return match ? match[1]! : hex(`trace\n${rootRunId}`, 32);
}

function durationNs(start: Date, end: Date | null, now: Date): number {
  return Math.max(0, (end ?? now).getTime() - start.getTime()) * 1_000_000;
}

function exception(at: Date | null, type: string | null | undefined, message: string | null | undefined): RunSpanEvent[] {
  if (!message || !at) return [];
  return [{ name: "exception", time: at, properties: { exception: { ...(type ? { type } : {}), message } } }];
}

/** The spans of a run's timeline (pure: unit-testable with plain values). */
export function buildRunTrace(timeline: RunTimeline, traceparent: string | null, now: Date): RunTrace {
  const { run } = timeline;
  const rootId = spanIdOf(run.id, "run");
  const finished = run.finishedAt !== null;
  const spans: RunSpan[] = [
    {
      id: rootId,
      parentId: null,
      runId: run.id,
      entity: "run",
      message: run.taskIdentifier,
      startTime: run.createdAt,
      durationNs: durationNs(run.createdAt, run.finishedAt, now),
      isError: ERROR_STATUSES.includes(run.status),
      isPartial: !finished,
      isCancelled: run.status === "CANCELED",
      properties: {
        status: run.status,
        ...(run.startedAt ? { startedAt: run.startedAt.toISOString() } : {}),
        ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
        ...(run.rootRunId ? { rootRunId: run.rootRunId } : {}),
      },
      events: [],
    },
  ];
  const attempts = timeline.entries.filter((e): e is Extract<TimelineEntry, { kind: "attempt" }> => e.kind === "attempt");
  /** The last attempt that had begun by `at` and had not ended before it. */
  const attemptAt = (at: Date) =>
    attempts.filter((a) => a.startedAt.getTime() <= at.getTime() && (a.endedAt === null || a.endedAt.getTime() >= at.getTime())).at(-1);
  for (const entry of timeline.entries) {
    const id = spanIdOf(run.id, entryKey(entry));
    const base = {
      id,
      runId: run.id,
      entity: entry.kind,
      message: entry.label,
      startTime: entry.startedAt,
      durationNs: durationNs(entry.startedAt, entry.endedAt, now),
      isPartial: entry.endedAt === null,
    };
    const estimated = entry.startEstimated ? { startEstimated: true } : {};
    if (entry.kind === "attempt") {
      const { number, ...detail } = entry.detail;
      spans.push({
        ...base,
        parentId: rootId,
        isError: ERROR_STATUSES.includes(entry.status),
        isCancelled: entry.status === "CANCELED",
        attemptNumber: number,
        properties: { status: entry.status, ...withoutNulls(detail), ...estimated },
        events: exception(entry.endedAt, entry.detail.errorName, entry.detail.errorMessage),
      });
      continue;
    }
    const attempt = attemptAt(entry.startedAt);
    const parent = { parentId: attempt ? spanIdOf(run.id, entryKey(attempt)) : rootId, ...(attempt ? { attemptNumber: attempt.detail.number } : {}) };
    if (entry.kind === "child") {
      spans.push({
        ...base,
        ...parent,
        isError: ERROR_STATUSES.includes(entry.status),
        isCancelled: entry.status === "CANCELED",
        properties: { status: entry.status, ...withoutNulls(entry.detail), ...estimated },
        events: [],
      });
      continue;
    }
    spans.push({
      ...base,
      ...parent,
      isError: entry.status === "FAILED" || entry.status === "TIMED_OUT",
      isCancelled: false,
      properties: { status: entry.status, ...withoutNulls(entry.detail), ...estimated },
      events: exception(entry.endedAt, null, entry.detail.errorMessage),
    });
  }
  spans.push(...logSpans(timeline));
  // By start (a stable sort: at the same moment, the order above), the run's span first.
  const [root, ...rest] = spans;
  rest.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  return { traceId: traceIdOf(traceparent, run.rootRunId ?? run.id), taskIdentifier: run.taskIdentifier, spans: [root!, ...rest], truncated: timeline.truncated || (timeline.logs?.truncated ?? false) };
}

/**
 * The run's log lines as zero-length spans (Trigger.dev's log events), each under the step it was
 * logged in, else its attempt: their properties are the line's attributes.
 */
function logSpans(timeline: RunTimeline): RunSpan[] {
  const lines = timeline.logs?.lines ?? [];
  const { run } = timeline;
  const placed = placeLogs(timeline, lines);
  return lines.map((log) => {
    const place = placed.get(log)!;
    const parent = place.step ?? place.attempt;
    return {
      id: spanIdOf(run.id, `log:${log.seq}`),
      parentId: parent ? spanIdOf(run.id, entryKey(parent)) : spanIdOf(run.id, "run"),
      runId: run.id,
      entity: "log",
      level: log.level.toUpperCase(),
      message: log.message,
      startTime: log.loggedAt,
      durationNs: 0,
      isError: false,
      isPartial: false,
      isCancelled: false,
      attemptNumber: log.attempt,
      properties: { ...(log.attributes ?? {}), ...(log.step ? { "svc.step": log.step } : {}), ...(log.source !== "logger" ? { "svc.source": log.source } : {}) },
      events: [],
    };
  });
}

/** Detail fields as span properties: dates as ISO text, empty fields left out. */
function withoutNulls(detail: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(detail)) {
    if (value === null || value === undefined) continue;
    out[key] = value instanceof Date ? value.toISOString() : value;
  }
  return out;
}

/** A run's trace, read from its rows (runTimeline plus its traceparent); NotFoundError when it is not in the environment. */
export async function runTrace(db: Queryable, environmentId: string, runId: string, now: Date): Promise<RunTrace> {
  const [timeline, traceparent] = await Promise.all([
    runTimeline(db, environmentId, runId),
    db.query<{ traceparent: string | null }>(`SELECT traceparent FROM runs WHERE id = $1 AND environment_id = $2`, [runId, environmentId]),
  ]);
  if (!timeline) throw new NotFoundError("Run not found");
  return buildRunTrace(timeline, traceparent.rows[0]?.traceparent ?? null, now);
}

