import { describe, expect, it } from "vitest";
import type { RunLog, RunTimeline, TimelineEntry } from "@svc/runtime/engine";
import { renderTimeline } from "./timeline-view.ts";
import { formatDuration } from "./format.ts";

const t0 = Date.parse("2026-11-22T10:00:00Z");
const at = (ms: number) => new Date(t0 + ms);
const links = {
  runHref: (id: string) => `/runs/${id}?tab=timeline&x="1"`,
  tokenHref: (id: string) => `/tokens/${id}`,
};

const attempt: TimelineEntry = {
  kind: "attempt", label: "Attempt 1", startedAt: at(0), endedAt: at(4000), durationMs: 4000, startEstimated: false, status: "FAILED",
  detail: { number: 1, workerId: "worker_<b>", errorName: "Error", errorMessage: "boom <img src=x onerror=alert(1)>", retryAt: at(5000), lastExecutionStartedAt: at(0) },
};
const step: TimelineEntry = {
  kind: "step", label: "<script>alert(1)</script>", startedAt: at(0), endedAt: at(340), durationMs: 340, startEstimated: true, status: "COMPLETED",
  detail: { stepKey: "<script>k</script>", epoch: 0, name: "<script>alert(1)</script>", ok: true, errorMessage: null },
};
const tokenWait: TimelineEntry = {
  kind: "wait", label: "wait.forToken", startedAt: at(2000), endedAt: at(6000), durationMs: 4000, startEstimated: false, status: "COMPLETED",
  detail: {
    stepKey: "#1", epoch: 0, type: "token", target: "waitpoint_abc", waitpointId: "waitpoint_abc", waitpointType: "MANUAL", suspended: true,
    resumedAt: at(6000), timeoutAt: null, childRunId: null, batchId: null, errorMessage: null,
  },
};
const child: TimelineEntry = {
  kind: "child", label: "child-task", startedAt: at(6000), endedAt: null, durationMs: null, startEstimated: false, status: "EXECUTING",
  detail: { runId: "run_child", taskIdentifier: "child-task", status: "EXECUTING", batchId: null, batchIndex: null, childStartedAt: at(6100) },
};
const pendingWait: TimelineEntry = {
  kind: "wait", label: "wait.forToken", startedAt: at(7000), endedAt: null, durationMs: null, startEstimated: false, status: "WAITING",
  detail: {
    stepKey: "#2", epoch: 0, type: "token", target: "waitpoint_next", waitpointId: "waitpoint_next", waitpointType: "MANUAL", suspended: true,
    resumedAt: null, timeoutAt: null, childRunId: null, batchId: null, errorMessage: null,
  },
};

function timeline(entries: TimelineEntry[], overrides: Partial<RunTimeline["run"]> = {}, truncated = false): RunTimeline {
  return {
    run: { id: "run_1", taskIdentifier: "parent", status: "WAITING", createdAt: at(0), startedAt: at(0), finishedAt: null, parentRunId: "run_parent", rootRunId: "run_root", ...overrides },
    entries,
    truncated,
  };
}

/** The bar of the row whose label is `label`: [x, width] as drawn. */
function bar(out: string, label: string): [string, string] {
  const row = out.split("<tr ").find((r) => r.includes(`<span class="tl-label">${label}</span>`))!;
  const match = /<rect class="tl-bar-fill" x="([^"]+)" y="0" width="([^"]+)"/.exec(row)!;
  return [match[1]!, match[2]!];
}

describe("renderTimeline", () => {
  const out = renderTimeline(timeline([attempt, step, tokenWait, child, pendingWait]), { ...links, now: at(10_000) }).text;

  it("renders every entry as a row with its label, status and duration", () => {
    expect(out.match(/<tr class="tl-row /g)).toHaveLength(5);
    expect(out).toContain('<tr class="tl-row tl-kind-attempt tl-status-failed tl-depth-0">');
    expect(out).toContain('<span class="tl-label">Attempt 1</span>');
    // In the attempt (which ended at 4 s): indented under it; the child run, triggered later, is not.
    expect(out).toContain('<tr class="tl-row tl-kind-wait tl-status-completed tl-suspended tl-depth-1">');
    expect(out).toContain('<tr class="tl-row tl-kind-child tl-status-executing tl-ongoing tl-depth-0">');
    expect(out).toContain('<td class="tl-duration">4.0 s</td>');
    expect(out).toContain('<td class="tl-duration">≤ 340 ms</td>');
    expect(out).toContain('<td class="tl-duration">ongoing</td>');
    expect(out).toContain("suspended the run; resumable at <time");
    expect(out).toContain("5 entries over 10 s");
  });

  it("escapes whatever the database holds: a step named <script>, an error message, a worker id", () => {
    expect(out).not.toContain("<script>");
    expect(out).not.toContain("<img");
    expect(out).not.toContain("<b>");
    expect(out).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(out).toContain("<code>&lt;script&gt;k&lt;/script&gt;</code>");
    expect(out).toContain("boom &lt;img src=x onerror=alert(1)&gt;");
  });

  it("links tokens, child runs, the parent and the root, with escaped hrefs", () => {
    expect(out).toContain('<a class="tl-token-link" href="/tokens/waitpoint_abc">waitpoint_abc</a>');
    expect(out).toContain('href="/runs/run_child?tab=timeline&amp;x=&quot;1&quot;">run_child</a>');
    expect(out).toContain('Parent <a class="tl-run-link" href="/runs/run_parent?tab=timeline&amp;x=&quot;1&quot;">run_parent</a>, root <a');
    expect(out).toContain('<p class="tl-waiting-on">Waiting on: <a class="tl-token-link" href="/tokens/waitpoint_next">waitpoint_next</a></p>');
  });

  it("places each bar on the run's span with SVG attributes, never a style attribute", () => {
    expect(out).not.toMatch(/style\s*=/i);
    expect(bar(out, "Attempt 1")).toEqual(["0%", "40%"]);
    expect(bar(out, "wait.forToken")).toEqual(["20%", "40%"]);
    // Ongoing: to `now`.
    expect(bar(out, "child-task")).toEqual(["60%", "40%"]);
  });

  it("draws an instant at the end of the span as a sliver inside it", () => {
    const instant: TimelineEntry = { ...step, label: "last", startedAt: at(4000), endedAt: at(4000), durationMs: 0, startEstimated: false };
    const html = renderTimeline(timeline([attempt, instant], { finishedAt: at(4000), status: "COMPLETED" }), links).text;
    expect(bar(html, "last")).toEqual(["99.5%", "0.5%"]);
    expect(bar(html, "Attempt 1")).toEqual(["0%", "100%"]);
  });

  it("says a run has no parent, and when entries were left out", () => {
    const html = renderTimeline(timeline([attempt], { parentRunId: null, rootRunId: null }, true), links).text;
    expect(html).toContain("Root run (no parent)");
    expect(html).toContain('<p class="tl-truncated">Only the first 1 entries are shown.</p>');
    expect(html).not.toContain("tl-legend");
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0 ms"],
    [340, "340 ms"],
    [999.4, "999 ms"],
    [999.6, "1.0 s"],
    [1200, "1.2 s"],
    [9949, "9.9 s"],
    [9950, "10 s"],
    [59_499, "59 s"],
    [59_500, "1 min"],
    [200_000, "3 min 20 s"],
    [3 * 3_600_000 + 2 * 60_000, "3 h 2 min"],
    [3_600_000, "1 h"],
    [2 * 86_400_000 + 4 * 3_600_000, "2 d 4 h"],
  ])("%d ms reads %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("renderTimeline with the run's log", () => {
  const log = (seq: number, ms: number, level: RunLog["level"], message: string, extra: Partial<RunLog> = {}): RunLog => ({
    seq, attempt: 1, level, message, attributes: null, loggedAt: at(ms), source: "logger", step: null, ledger: { epoch: 0, key: "#0" }, ...extra,
  });
  const lines = [
    log(1, 0, "info", "starting <b>", { attributes: { orderId: "o_1" } }),
    log(2, 100, "warn", "inside the step", { step: 'step.run("<script>alert(1)</script>")', ledger: { epoch: 0, key: "#1" } }),
    log(3, 2000, "debug", "before the wait", { source: "console", ledger: { epoch: 0, key: "#1" } }),
    log(4, 3000, "error", "after the wait", { ledger: { epoch: 0, key: "#2" } }),
  ];
  // The step as recorded: the first durable call (#0), so a line logged before it at the same moment comes first.
  const firstStep: TimelineEntry = { ...step, detail: { ...(step.detail as Extract<TimelineEntry, { kind: "step" }>["detail"]), stepKey: "#0" } };
  const withLogs = (filter = {}) =>
    renderTimeline({ ...timeline([attempt, firstStep, tokenWait, child, pendingWait]), logs: { lines, dropped: 3, truncated: false } }, { ...links, now: at(10_000), logFilter: { ...filter, action: "/runs/run_1" } }).text;
  const rowOrder = (out: string) => [...out.matchAll(/<span class="tl-(?:label|message)">([^<]*(?:&lt;b&gt;)?)/g)].map((m) => m[1]);

  it("draws attempts, steps, waits, runs and log lines as a tree, lines under the step they were logged in", () => {
    const out = withLogs();
    expect(rowOrder(out)).toEqual([
      "Attempt 1", "starting &lt;b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", "inside the step", "before the wait", "wait.forToken", "after the wait", "child-task", "wait.forToken",
    ]);
    expect(out).toContain('<tr class="tl-row tl-kind-log tl-level-info tl-depth-1">');
    expect(out).toContain('<tr class="tl-row tl-kind-log tl-level-warn tl-depth-2">');
    expect(out).toContain('<code class="tl-attributes">{&quot;orderId&quot;:&quot;o_1&quot;}</code>');
    expect(out).toContain('<span class="tl-kind">console</span>');
    expect(out).toContain("5 entries and 4 log lines over 10 s");
    expect(out).toContain("3 more log lines were dropped past the run's log cap.");
    expect(out).not.toContain("<script>");
  });

  it("filters lines by lowest level and by text, and says how many it shows", () => {
    const warn = withLogs({ level: "warn" });
    expect(rowOrder(warn).filter((l) => !["Attempt 1", "wait.forToken", "child-task"].includes(l!) && !l!.startsWith("&lt;script"))).toEqual(["inside the step", "after the wait"]);
    expect(warn).toContain('<option value="warn" selected>');
    expect(warn).toContain("2 of 4 lines");
    const text = withLogs({ text: "O_1" });
    expect(text).toContain("starting &lt;b&gt;");
    expect(text).not.toContain("after the wait");
    expect(text).toContain('value="O_1"');
  });
});
