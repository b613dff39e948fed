import type { RunLog } from "@svc/runtime/engine";
import { html, type Html } from "./html.ts";

/** The lowest level shown (`log` counts as `info`), and text the line must hold. */
export interface LogFilter {
  level?: "debug" | "info" | "warn" | "error";
  text?: string;
}

const RANK = { debug: 0, log: 1, info: 1, warn: 2, error: 3 } as const;
const LEVELS = ["debug", "info", "warn", "error"] as const;
/** Longer filter text is cut: it only ever narrows what is shown. */
const MAX_TEXT = 200;

/** The filter of the run page's query (`logLevel`, `logText`); anything else is no filter. */
export function parseLogFilter(query: Record<string, unknown>): LogFilter {
  const level = LEVELS.find((l) => l === query.logLevel);
  const text = typeof query.logText === "string" ? query.logText.trim().slice(0, MAX_TEXT) : "";
  return { ...(level ? { level } : {}), ...(text ? { text } : {}) };
}

/** The lines at or above the filter's level whose message or attributes hold its text (any case). */
export function filterLogs(lines: RunLog[], filter: LogFilter): RunLog[] {
  const min = filter.level ? RANK[filter.level] : 0;
  const text = filter.text?.toLowerCase();
  return lines.filter(
    (l) => RANK[l.level] >= min && (!text || l.message.toLowerCase().includes(text) || (l.attributes !== null && JSON.stringify(l.attributes).toLowerCase().includes(text))),
  );
}

/** The filter as a form that reloads the page with it (no script: the dashboard's CSP allows none inline). */
export function logFilterForm(filter: LogFilter & { action: string }, count: { shown: number; total: number }): Html {
  return html`<form class="tl-log-filter" method="get" action="${filter.action}" aria-label="Filter log lines">
<label>Level <select name="logLevel"><option value="">all</option>${LEVELS.map((l) => html`<option value="${l}"${filter.level === l ? html` selected` : null}>${l} and above</option>`)}</select></label>
<label>Text <input type="search" name="logText" value="${filter.text ?? ""}" maxlength="${MAX_TEXT}"></label>
<button type="submit" class="secondary">Filter logs</button>
${(filter.level || filter.text) && html`<a href="${filter.action}">Clear</a> <span class="tl-detail">${count.shown} of ${count.total} lines</span>`}
</form>`;
}
