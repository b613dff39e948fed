import { timelineRows, type RunLog, type RunTimeline, type TimelineEntry, type TimelineRow } from "@svc/runtime/engine";
import { html, type Html } from "./html.ts";
import { formatDuration } from "./format.ts";
import { filterLogs, logFilterForm, type LogFilter } from "./log-filter.ts";

/** Where the timeline links to: the dashboard's run and token pages. */
export interface TimelineLinks {
  runHref(runId: string): string;
  tokenHref(waitpointId: string): string;
  /**
   * The moment the page is drawn: bars of what still goes on reach it. Without it they reach the
   * latest recorded moment.
   */
  now?: Date;
  /** Which log lines to show (the page's filter form; the run page's own address is its action). */
  logFilter?: LogFilter & { action: string };
}

/** Narrower bars than this (a percentage of the run's span) are drawn this wide, so an instant stays visible. */
const MIN_BAR_PERCENT = 0.5;

/**
 * A run's timeline as a table drawn as a tree: each attempt, and under it (indented) its steps,
 * waits, runs it triggered and log lines by time, lines logged inside a step under that step.
 * Each row has a bar placed on the run's span (from its creation to its end). The bars are inline SVG: their geometry is in presentation
 * attributes, which the dashboard's CSP allows where it refuses style attributes. Every value
 * from the database goes through `html`'s escaping. Classes are `tl-*`; the dashboard's CSS
 * styles them.
 */
export function renderTimeline(timeline: RunTimeline, links: TimelineLinks): Html {
  const { run, entries } = timeline;
  const start = run.createdAt.getTime();
  const end = spanEnd(timeline, links.now);
  const length = Math.max(end - start, 1);
  const waitingOn = entries.filter((e) => e.kind === "wait" && e.status === "WAITING");
  const logs = timeline.logs;
  const shown = logs ? filterLogs(logs.lines, links.logFilter ?? {}) : [];
  const rows = timelineRows(timeline, shown);
  return html`<section class="tl" aria-label="Run timeline">
<p class="tl-relatives">${relatives(timeline, links)}</p>
${waitingOn.length > 0 && html`<p class="tl-waiting-on">Waiting on: ${waitingOn.map((e, i) => html`${i > 0 && ", "}${waitTarget(e, links)}`)}</p>`}
${logs && links.logFilter && logFilterForm(links.logFilter, { shown: shown.length, total: logs.lines.length })}
<table class="tl-table">
<caption class="tl-caption">${entries.length} ${entries.length === 1 ? "entry" : "entries"}${logs ? ` and ${shown.length} log ${shown.length === 1 ? "line" : "lines"}` : ""} over ${formatDuration(end - start)}, from the run's creation${run.finishedAt ? " to its end" : ""}</caption>
<thead><tr><th scope="col">What</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Status</th><th scope="col"><span class="tl-visually-hidden">Span</span></th></tr></thead>
<tbody>
${rows.map((r) => (r.item.kind === "entry" ? row(r.item.entry, r.depth, start, end, length, links) : logRow(r.item.log, r, start, end, length)))}
</tbody>
</table>
${entries.some((e) => e.startEstimated) && html`<p class="tl-legend">≥ and ≤: the start was not recorded, only bounded (a step's start; a retried attempt's, when it suspended), so the duration is at most the one shown.</p>`}
${timeline.truncated && html`<p class="tl-truncated">Only the first ${entries.length} entries are shown.</p>`}
${logs?.truncated && html`<p class="tl-truncated">Only the first ${logs.lines.length} log lines are shown.</p>`}
${logs && logs.dropped > 0 && html`<p class="tl-truncated">${logs.dropped} more log ${logs.dropped === 1 ? "line was" : "lines were"} dropped past the run's log cap.</p>`}
</section>`;
}

/** A log line: a row under its attempt (or its step), with its level as status and an instant's bar. */
function logRow(log: RunLog, place: TimelineRow, start: number, end: number, length: number): Html {
  const from = log.loggedAt.getTime();
  const x = Math.min(clamp(((from - start) / length) * 100, 0, 100), 100 - MIN_BAR_PERCENT);
  const attributes = log.attributes && Object.keys(log.attributes).length > 0 ? JSON.stringify(log.attributes) : null;
  return html`<tr class="tl-row tl-kind-log tl-level-${log.level} tl-depth-${String(place.depth)}">
<th scope="row" class="tl-what"><span class="tl-kind">${log.source === "console" ? "console" : "log"}</span> <span class="tl-message">${log.message}</span>${attributes && html` <code class="tl-attributes">${attributes}</code>`}${log.step && html` <span class="tl-detail">in ${log.step}</span>`}</th>
<td class="tl-start"><time datetime="${log.loggedAt.toISOString()}" title="${log.loggedAt.toISOString()}">+${formatDuration(from - start)}</time></td>
<td class="tl-duration"></td>
<td class="tl-status">${log.level.toUpperCase()}</td>
<td class="tl-span"><svg class="tl-bar" width="100%" height="12" aria-hidden="true" focusable="false"><rect class="tl-bar-fill" x="${percent(x)}" y="0" width="${percent(MIN_BAR_PERCENT)}" height="100%"></rect></svg></td>
</tr>
`;
}

function row(entry: TimelineEntry, depth: number, start: number, end: number, length: number, links: TimelineLinks): Html {
  const from = entry.startedAt.getTime();
  const to = entry.endedAt?.getTime() ?? end;
  let x = clamp(((from - start) / length) * 100, 0, 100);
  const width = Math.max(clamp(((to - from) / length) * 100, 0, 100), MIN_BAR_PERCENT);
  x = Math.min(x, 100 - width);
  const suspended = entry.kind === "wait" && entry.detail.suspended;
  const classes = `tl-row tl-kind-${entry.kind} tl-status-${statusClass(entry.status)}${suspended ? " tl-suspended" : ""}${entry.endedAt === null ? " tl-ongoing" : ""} tl-depth-${depth}`;
  return html`<tr class="${classes}">
<th scope="row" class="tl-what"><span class="tl-kind">${entry.kind}</span> <span class="tl-label">${entry.label}</span> <span class="tl-detail">${detail(entry, start, links)}</span></th>
<td class="tl-start"><time datetime="${entry.startedAt.toISOString()}" title="${entry.startedAt.toISOString()}">${entry.startEstimated ? "≥ " : ""}+${formatDuration(from - start)}</time></td>
<td class="tl-duration">${entry.durationMs === null ? "ongoing" : `${entry.startEstimated ? "≤ " : ""}${formatDuration(entry.durationMs)}`}</td>
<td class="tl-status">${entry.status}</td>
<td class="tl-span"><svg class="tl-bar" width="100%" height="12" aria-hidden="true" focusable="false"><rect class="tl-bar-fill" x="${percent(x)}" y="0" width="${percent(width)}" height="100%"></rect></svg></td>
</tr>
`;
}

function detail(entry: TimelineEntry, start: number, links: TimelineLinks): Html {
  const since = (at: Date) => html`<time datetime="${at.toISOString()}">+${formatDuration(at.getTime() - start)}</time>`;
  switch (entry.kind) {
    case "attempt": {
      const d = entry.detail;
      return html`${d.workerId && html`worker <code>${d.workerId}</code>`}${d.errorMessage && html` <span class="tl-error">${d.errorName ? `${d.errorName}: ` : ""}${d.errorMessage}</span>`}${d.retryAt && html` retry due ${since(d.retryAt)}`}`;
    }
    case "step": {
      const d = entry.detail;
      return html`key <code>${d.stepKey}</code>, epoch ${d.epoch}${d.errorMessage && html` <span class="tl-error">${d.errorMessage}</span>`}`;
    }
    case "wait": {
      const d = entry.detail;
      const target = d.type === "datetime" ? d.timeoutAt && html`until ${since(d.timeoutAt)}` : waitTarget(entry, links);
      const suspension = d.suspended
        ? d.resumedAt ? html`suspended the run; resumable at ${since(d.resumedAt)}` : html`suspended the run`
        : html`did not suspend (already finished)`;
      return html`${target} <span class="tl-suspension">${suspension}</span>${d.errorMessage && html` <span class="tl-error">${d.errorMessage}</span>`} key <code>${d.stepKey}</code>`;
    }
    case "child": {
      const d = entry.detail;
      return html`<a class="tl-run-link" href="${links.runHref(d.runId)}">${d.runId}</a>${d.batchId && html` batch <code>${d.batchId}</code> #${d.batchIndex ?? ""}`}`;
    }
  }
}

/** What a wait waits on, linked when the dashboard has a page for it. */
function waitTarget(entry: TimelineEntry, links: TimelineLinks): Html {
  if (entry.kind !== "wait") return html``;
  const d = entry.detail;
  if (d.type === "token" && d.waitpointId) return html`<a class="tl-token-link" href="${links.tokenHref(d.waitpointId)}">${d.waitpointId}</a>`;
  if (d.childRunId) return html`<a class="tl-run-link" href="${links.runHref(d.childRunId)}">${d.childRunId}</a>`;
  if (d.batchId) return html`batch <code>${d.batchId}</code>`;
  return html`<code>${d.waitpointId ?? d.target ?? ""}</code>`;
}

function relatives(timeline: RunTimeline, links: TimelineLinks): Html {
  const { parentRunId, rootRunId } = timeline.run;
  if (!parentRunId) return html`Root run (no parent)`;
  const link = (id: string) => html`<a class="tl-run-link" href="${links.runHref(id)}">${id}</a>`;
  return html`Parent ${link(parentRunId)}${rootRunId && rootRunId !== parentRunId && html`, root ${link(rootRunId)}`}`;
}

/** The span's end: the run's end, else `now`, else the latest recorded moment. */
function spanEnd(timeline: RunTimeline, now: Date | undefined): number {
  let end = timeline.run.finishedAt?.getTime() ?? now?.getTime() ?? timeline.run.createdAt.getTime();
  for (const e of timeline.entries) end = Math.max(end, e.startedAt.getTime(), e.endedAt?.getTime() ?? 0);
  return end;
}

/** Statuses are a closed uppercase set; anything else gets one class. */
function statusClass(status: string): string {
  return /^[A-Z_]+$/.test(status) ? status.toLowerCase().replaceAll("_", "-") : "other";
}

const clamp = (n: number, lo: number, hi: number) => Math.min(Math.max(n, lo), hi);
const percent = (n: number) => `${Number(n.toFixed(2))}%`;
