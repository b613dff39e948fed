import type { RunWaitingFor } from "@svc/runtime/contracts";
import { html, type Html } from "./html.ts";
import { scopeHref, type DashboardScope } from "./scope.ts";
import { timeCell } from "./format.ts";

/** What a run waits on, each waitpoint linked: a token to its page, a child run or batch to the run list. */
export function waitingForView(scope: DashboardScope, waits: readonly RunWaitingFor[]): Html {
  if (waits.length === 0) return html`<span class="muted">—</span>`;
  return html`${waits.map((wait) => {
    switch (wait.type) {
      case "MANUAL":
        return html`<div>token <a class="mono" href="${scopeHref(scope, `tokens/${encodeURIComponent(wait.id)}`)}">${wait.id}</a>${wait.timeoutAt ? html` <span class="muted">until ${timeCell(wait.timeoutAt)}</span>` : null}</div>`;
      case "DATETIME":
        return html`<div>until ${timeCell(wait.resumeAt)}</div>`;
      case "RUN":
        return html`<div>run <a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(wait.runId)}`)}">${wait.runId}</a></div>`;
      case "BATCH":
        return html`<div>batch <a class="mono" href="${scopeHref(scope, "runs", { batch: wait.batchId })}">${wait.batchId}</a></div>`;
      case "SESSION":
        return html`<div>session <a class="mono" href="${scopeHref(scope, `sessions/${encodeURIComponent(wait.sessionId)}`)}">${wait.sessionId}</a> .${wait.channel}</div>`;
    }
  })}`;
}
