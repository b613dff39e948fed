import type { FastifyInstance } from "fastify";
import { listLiveWorkers, queueOverview } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { formatAge, formatDuration, timeCell } from "../format.ts";
import { html } from "../html.ts";
import { scopedGet } from "../page.ts";
import { scopeHref } from "../scope.ts";

/**
 * GET /dashboard/{ref}/{env}/queues: the environment's live workers (from the registry they renew)
 * and its queues. Computed when the page is opened, not refreshed on a timer: the queue figures
 * read the environment's unfinished runs without an index on status (one would cost every run
 * update its HOT update), a few hundred ms over a million runs.
 */
export function registerQueuesPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet(dash, deps, "queues", "queues", async ({ scope, now }) => {
    const [workers, queues] = await Promise.all([listLiveWorkers(deps.engine.db, scope.environment.id, now), queueOverview(deps.engine.db, scope.environment.id, now)]);
    const content = html`<h1>Queues &amp; workers</h1>
<p class="muted">As of ${timeCell(now)} · <a href="${scopeHref(scope, "queues")}">refresh</a></p>
<h2>Workers (${workers.length} live)</h2>
<table><thead><tr><th>Worker</th><th>Version</th><th>Slots in use</th><th>Last heartbeat</th><th>Started</th><th>Tasks</th></tr></thead><tbody>
${workers.length === 0 ? html`<tr><td colspan="6" class="muted">No worker of this environment is running.</td></tr>` : workers.map((w) => html`<tr>
<td class="mono">${w.id}</td><td>${w.version}</td>
<td>${w.slotsInUse}${w.slots !== null ? html` / ${w.slots}` : null}</td>
<td>${w.lastHeartbeatAt ? formatAge(w.lastHeartbeatAt, now) : html`<span class="muted">—</span>`}</td>
<td>${timeCell(w.startedAt)}</td><td>${w.tasks.join(", ")}</td></tr>`)}
</tbody></table>
<h2>Queues</h2>
<table><thead><tr><th>Queue</th><th>Queued</th><th>Oldest queued</th><th>Running</th><th>Concurrency limit</th><th>Waiting</th><th>Delayed</th><th>Tasks</th></tr></thead><tbody>
${queues.length === 0 ? html`<tr><td colspan="8" class="muted">No queues yet: a worker registers its tasks' queues when it starts.</td></tr>` : queues.map((q) => html`<tr>
<td><a href="${scopeHref(scope, "runs", { queue: q.queue })}">${q.queue}</a></td><td>${q.queued}</td>
<td>${q.oldestQueuedAt ? formatDuration(Math.max(0, now.getTime() - q.oldestQueuedAt.getTime())) : html`<span class="muted">—</span>`}</td>
<td>${q.running}</td><td>${q.concurrencyLimit ?? html`<span class="muted">unlimited</span>`}</td><td>${q.waiting}</td><td>${q.delayed}</td><td>${q.tasks.join(", ")}</td></tr>`)}
</tbody></table>`;
    return { title: "Queues & workers", content };
  });
}
