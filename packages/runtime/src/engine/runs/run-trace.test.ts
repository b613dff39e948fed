import { describe, expect, it } from "vitest";
import { buildRunTrace, spanIdOf, traceIdOf } from "./run-trace.ts";
import type { RunTimeline, TimelineEntry } from "./timeline.ts";

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s));
const now = t(100);

function timeline(status: RunTimeline["run"]["status"], finishedAt: Date | null, entries: TimelineEntry[]): RunTimeline {
  return {
    run: { id: "run_p", taskIdentifier: "parent", status, createdAt: t(0), startedAt: t(1), finishedAt, parentRunId: null, rootRunId: null },
    entries,
    truncated: false,
  };
}

const attempt = (n: number, start: number, end: number | null, status: string, error?: string): TimelineEntry => ({
  kind: "attempt", label: `Attempt ${n}`, startedAt: t(start), endedAt: end === null ? null : t(end), durationMs: null, startEstimated: false, status,
  detail: { number: n, workerId: "w1", errorName: error ? "Error" : null, errorMessage: error ?? null, retryAt: null, lastExecutionStartedAt: t(start) },
});
const stepAt = (start: number, key: string): TimelineEntry => ({
  kind: "step", label: key, startedAt: t(start), endedAt: t(start + 1), durationMs: 1000, startEstimated: true, status: "COMPLETED",
  detail: { stepKey: key, epoch: 0, name: key, ok: true, errorMessage: null },
});
const waiting: TimelineEntry = {
  kind: "wait", label: "wait.forToken", startedAt: t(12), endedAt: null, durationMs: null, startEstimated: false, status: "WAITING",
  detail: { stepKey: "#1", epoch: 1, type: "token", target: "waitpoint_x", waitpointId: "waitpoint_x", waitpointType: "MANUAL", suspended: true, resumedAt: null, timeoutAt: null, childRunId: null, batchId: null, errorMessage: null },
};

describe("buildRunTrace", () => {
  it("puts attempts under the run, and what happened in an attempt under it, with stable ids and nanosecond durations", () => {
    const trace = buildRunTrace(timeline("WAITING", null, [attempt(1, 1, 5, "FAILED", "boom"), stepAt(2, "#0"), attempt(2, 10, null, "WAITING"), stepAt(11, "#0b"), waiting]), null, now);
    const [root, a1, s1, a2, s2, w] = trace.spans;
    expect(root).toMatchObject({ id: spanIdOf("run_p", "run"), parentId: null, entity: "run", message: "parent", isPartial: true, isError: false, durationNs: 100e9 });
    expect(a1).toMatchObject({ parentId: root!.id, entity: "attempt", attemptNumber: 1, isError: true, isPartial: false, durationNs: 4e9 });
    expect(a1!.events).toEqual([{ name: "exception", time: t(5), properties: { exception: { type: "Error", message: "boom" } } }]);
    expect(s1).toMatchObject({ parentId: a1!.id, attemptNumber: 1, entity: "step" });
    expect(a2).toMatchObject({ parentId: root!.id, attemptNumber: 2, isPartial: true, durationNs: 90e9 });
    expect(s2).toMatchObject({ parentId: a2!.id, attemptNumber: 2 });
    expect(w).toMatchObject({ parentId: a2!.id, entity: "wait", isPartial: true, properties: { status: "WAITING", type: "token", target: "waitpoint_x", suspended: true } });
    expect(new Set(trace.spans.map((s) => s.id)).size).toBe(6);
    expect(buildRunTrace(timeline("WAITING", null, [attempt(1, 1, 5, "FAILED", "boom")]), null, now).spans[1]!.id).toBe(a1!.id);
  });

  it("hangs what no attempt covers on the run, and marks a canceled run", () => {
    const trace = buildRunTrace(timeline("CANCELED", t(3), [stepAt(2, "#0")]), null, now);
    expect(trace.spans[0]).toMatchObject({ isCancelled: true, isPartial: false, isError: false, durationNs: 3e9 });
    expect(trace.spans[1]).toMatchObject({ parentId: trace.spans[0]!.id });
    expect(trace.spans[1]!.attemptNumber).toBeUndefined();
  });

  it("takes the trace id of the run's traceparent, else one derived from its root run", () => {
    expect(traceIdOf("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "run_r")).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(traceIdOf(null, "run_r")).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIdOf("garbage", "run_r")).toBe(traceIdOf(null, "run_r"));
    expect(traceIdOf(null, "run_r")).not.toBe(traceIdOf(null, "run_s"));
  });
});
