import type { FastifyInstance } from "fastify";
import { cancelRun, isFinalRunStatus, REPLAYABLE_FROM_FAILURE, replayRunFromFailure, retrieveRun, runTimeline, type RunRow, type RunStatus } from "@svc/runtime/engine";
import type { RelatedRun, RetrieveRunResponse } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { presentRetrievedRun } from "../../presenters/retrieved-run.ts";
import { formatDuration, jsonBlock, statusBadge, tagList, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost } from "../page.ts";
import { runHref, scopeHref, type DashboardScope } from "../scope.ts";
import { waitingForView } from "../waiting-for-view.ts";
import { renderTimeline } from "../timeline-view.ts";
import { registerReplayPages } from "./run-replay.ts";
import { parseLogFilter } from "../log-filter.ts";

type RunParams = { runId: string };

/** Messages a redirect may ask the page to show (by code: the page never echoes text from the URL). */
const NOTICES: Record<string, string> = {
  canceled: "The run was canceled (with its unfinished child runs).",
  "cancel-noop": "The run had already finished; nothing was canceled.",
  replayed: "This run is a replay.",
  "replayed-from-failure": "This run resumes the failed run from where it failed: the steps, waits and child results it recorded are replayed, not done again.",
  tested: "Test run triggered from the task's Test form.",
};

function relatedLink(scope: DashboardScope, run: RelatedRun): Html {
  return html`<a class="mono" href="${runHref(scope, run.id)}">${run.id}</a> ${run.taskIdentifier} ${statusBadge(run.status)}`;
}

/**
 * Where the run waits its turn: its queue (linking to the queue's runs), and what else decides
 * when it may start, when anything does: its concurrency and rate keys, the named limits it holds
 * and its gates (docs/queues-and-concurrency.md, docs/rate-limits.md).
 */
function schedulingFacts(scope: DashboardScope, row: Pick<RunRow, "queue_name" | "concurrency_key" | "rate_limit_key" | "rate_limit" | "rate_period_ms" | "concurrency_limits" | "gates">): Html {
  const gates = row.gates ?? [];
  return html`<dt>Queue</dt><dd><a class="mono" href="${scopeHref(scope, "runs", { queue: row.queue_name })}">${row.queue_name}</a></dd>
${row.concurrency_key ? html`<dt>Concurrency key</dt><dd class="mono">${row.concurrency_key}</dd>` : null}
${row.rate_limit_key ? html`<dt>Rate key</dt><dd class="mono">${row.rate_limit_key}</dd>` : null}
${row.rate_limit && row.rate_period_ms ? html`<dt>Own rate</dt><dd>${row.rate_limit} per ${formatDuration(row.rate_period_ms)}</dd>` : null}
${row.concurrency_limits?.length ? html`<dt>Concurrency limits</dt><dd class="mono">${row.concurrency_limits.join(", ")}</dd>` : null}
${gates.length > 0 ? html`<dt>Gates</dt><dd class="mono">${gates.map((g, i) => html`${i > 0 ? ", " : ""}${g.queue}${g.concurrencyKey ? ` (key ${g.concurrencyKey})` : ""}`)}</dd>` : null}`;
}

function facts(scope: DashboardScope, run: RetrieveRunResponse, row: Parameters<typeof schedulingFacts>[1]): Html {
  const related = run.relatedRuns;
  return html`<dl class="facts">
<dt>Status</dt><dd>${statusBadge(run.status)}</dd>
<dt>Task</dt><dd>${run.taskIdentifier}</dd>
${schedulingFacts(scope, row)}
<dt>Created</dt><dd>${timeCell(run.createdAt)}</dd>
<dt>Started</dt><dd>${timeCell(run.startedAt)}</dd>
<dt>Finished</dt><dd>${timeCell(run.finishedAt)}</dd>
<dt>Duration</dt><dd>${run.durationMs ? formatDuration(run.durationMs) : "—"}</dd>
<dt>Attempts</dt><dd>${run.attemptCount}</dd>
<dt>Version</dt><dd>${run.version ?? "—"}</dd>
<dt>Tags</dt><dd>${tagList(run.tags)}</dd>
${run.idempotencyKey ? html`<dt>Idempotency key</dt><dd class="mono">${run.idempotencyKey}</dd>` : null}
${run.batchId ? html`<dt>Batch</dt><dd><a class="mono" href="${scopeHref(scope, "runs", { batch: run.batchId })}">${run.batchId}</a></dd>` : null}
${run.schedule ? html`<dt>Schedule</dt><dd><a class="mono" href="${scopeHref(scope, "runs", { schedule: run.schedule.id })}">${run.schedule.id}</a> ${run.schedule.generator.expression}</dd>` : null}
${related.parent ? html`<dt>Parent</dt><dd>${relatedLink(scope, related.parent)}</dd>` : null}
${related.root && related.root.id !== related.parent?.id ? html`<dt>Root</dt><dd>${relatedLink(scope, related.root)}</dd>` : null}
${run.status === "WAITING" ? html`<dt>Waiting for</dt><dd>${waitingForView(scope, run.waitingFor ?? [])}</dd>` : null}
</dl>`;
}

function actions(scope: DashboardScope, run: RetrieveRunResponse, csrf: Html): Html {
  return html`<div class="actions">
${isFinalRunStatus(run.status as RunStatus) ? null : html`<form method="post" action="${runHref(scope, run.id)}/cancel">${csrf}<button class="danger" type="submit">Cancel run</button></form>`}
<a class="button secondary" href="${runHref(scope, run.id)}/replay">Replay…</a>
${REPLAYABLE_FROM_FAILURE.includes(run.status as RunStatus) ? html`<form method="post" action="${runHref(scope, run.id)}/replay-from-failure">${csrf}<button class="secondary" type="submit" title="A new run that keeps what this one recorded and runs again from the step that failed">Replay from failure</button></form>` : null}
</div>`;
}

/** GET /dashboard/{ref}/{env}/runs/{runId} and its actions (cancel, replay from failure; replay: run-replay.ts). */
export function registerRunPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet<RunParams>(dash, deps, "runs/:runId", "runs", async ({ scope, params, query, session, now }) => {
    // Another environment's (or project's) run is "Run not found", as over the API.
    const detail = await retrieveRun(deps.engine, scope.environment.id, params.runId);
    const run = presentRetrievedRun(detail);
    const timeline = await runTimeline(deps.engine.db, scope.environment.id, run.id);
    const tokenHref = (id: string) => scopeHref(scope, `tokens/${encodeURIComponent(id)}`);
    const notice = typeof query.notice === "string" ? NOTICES[query.notice] : undefined;
    const children = run.relatedRuns.children ?? [];
    const content = html`<h1><span class="mono">${run.id}</span> ${statusBadge(run.status)}</h1>
${run.relatedRuns.parent ? html`<p class="child-of">Child run of ${relatedLink(scope, run.relatedRuns.parent)}</p>` : null}
${notice ? html`<p class="notice">${notice}</p>` : null}
${actions(scope, run, csrfField(session))}
<div class="grid2">
<section class="card"><h2>Run</h2>${facts(scope, run, detail.run)}</section>
<section class="card"><h2>Payload</h2>${run.payloadPresignedUrl ? html`<p>Too large to show: <a href="${run.payloadPresignedUrl}">download</a></p>` : jsonBlock(run.payload)}
${run.error ? html`<h2>Error</h2><pre class="json">${run.error.name ? `${run.error.name}: ` : ""}${run.error.message}${run.error.stackTrace ? `\n\n${run.error.stackTrace}` : ""}</pre>` : null}
${run.status === "COMPLETED" ? html`<h2>Output</h2>${run.outputPresignedUrl ? html`<p>Too large to show: <a href="${run.outputPresignedUrl}">download</a></p>` : jsonBlock(run.output)}` : null}
${run.metadata ? html`<h2>Metadata</h2>${jsonBlock(run.metadata)}` : null}
</section>
</div>
${timeline ? html`<section class="card"><h2>Timeline and logs</h2>${renderTimeline(timeline, { runHref: (id) => runHref(scope, id), tokenHref, now, logFilter: { ...parseLogFilter(query), action: runHref(scope, run.id) } })}</section>` : null}
${children.length > 0 ? html`<section class="card"><h2>Child runs</h2><ul class="children">${children.map((child) => html`<li>${relatedLink(scope, child)} <span class="muted">${timeCell(child.createdAt)}</span></li>`)}</ul></section>` : null}`;
    return { title: run.id, content };
  });

  scopedPost<RunParams>(dash, deps, "runs/:runId/cancel", "runs", async ({ scope, params }) => {
    const result = await cancelRun(deps.engine, scope.environment.id, params.runId);
    if (result.canceledRunIds.length > 0) deps.metrics?.runsFinished.inc({ status: "CANCELED" }, result.canceledRunIds.length);
    return { redirect: runHref(scope, result.id, { notice: result.canceledRunIds.length > 0 ? "canceled" : "cancel-noop" }) };
  });

  scopedPost<RunParams>(dash, deps, "runs/:runId/replay-from-failure", "runs", async ({ scope, params }) => {
    const result = await replayRunFromFailure(deps.engine, scope.environment, params.runId);
    if (!result.isCached) deps.metrics?.runsTriggered.inc();
    return { redirect: runHref(scope, result.id, { notice: "replayed-from-failure" }) };
  });

  registerReplayPages(dash, deps);
}
