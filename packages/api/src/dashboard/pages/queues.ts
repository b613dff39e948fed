import type { FastifyInstance } from "fastify";
import { listLiveWorkers, queueOverview, unservedTasks, type QueueOverview, type UnservedTask } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { formatAge, formatDuration, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { scopedGet } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";

/**
 * Queued runs nothing will run as things stand: their task is served by no live worker of the
 * environment (never registered: a typo or undeployed code; registered: its workers are gone).
 */
export function unservedView(scope: DashboardScope, unserved: UnservedTask[], now: Date): Html | null {
  if (unserved.length === 0) return null;
  return html`<section class="card unserved" aria-label="Runs no worker serves">
<h2>Queued runs no live worker serves</h2>
<p>These runs stay queued until a worker of this environment with their task starts.</p>
<ul>${unserved.map((u) => html`<li><a href="${scopeHref(scope, "runs", { task: u.task, status: u.registered ? "QUEUED" : "PENDING_VERSION" })}"><strong>${u.task}</strong></a>: ${u.queued} queued, the oldest for ${formatDuration(Math.max(0, now.getTime() - u.oldestCreatedAt.getTime()))} — ${u.registered ? "no live worker has this task" : "no worker of this environment ever registered this task (a typo in the task id, or code not deployed here?)"}</li>`)}</ul>
</section>`;
}

/**
 * A queue's rate limit, whether its runs carry their own, and how many ready runs wait for their
 * rate key's slot (docs/rate-limits.md).
 */
export function rateLimitCell(rate: QueueOverview["rateLimit"], ownRates: QueueOverview["ownRates"] = null): Html {
  if (rate === null && ownRates === null) return html`<span class="muted">none</span>`;
  const waiting = rate?.waiting ?? ownRates?.waiting ?? 0;
  return html`${rate ? html`${rate.limit} per ${formatDuration(rate.periodMs)}` : null}${rate && ownRates ? html`<br>` : null}${ownRates ? html`<span class="muted">runs with their own rate</span>` : null}${waiting > 0 ? html`<br><span class="rate-waiting">${waiting} waiting for their slot</span>` : null}`;
}

/** The limit in force: an override says so and what the tasks declare. */
function limitCell(q: QueueOverview): Html {
  const declared = q.concurrencyLimit ?? "unlimited";
  if (q.limitOverride !== null) return html`${q.limitOverride} <span class="muted" title="Overridden until reset">(overridden; declared ${declared})</span>`;
  return q.concurrencyLimit === null ? html`<span class="muted">unlimited</span>` : html`${q.concurrencyLimit}`;
}

/**
 * GET /dashboard/{ref}/{env}/queues: the environment's live workers (from the registry they renew)
 * and its queues. Computed when the page is opened, not refreshed on a timer: the queue figures
 * read the environment's unfinished runs without an index on status (one would cost every run
 * update its HOT update), a few hundred ms over a million runs.
 */
export function registerQueuesPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet(dash, deps, "queues", "queues", async ({ scope, now }) => {
    const [workers, queues, unserved] = await Promise.all([
      listLiveWorkers(deps.engine.db, scope.environment.id, now),
      queueOverview(deps.engine.db, scope.environment.id, now),
      unservedTasks(deps.engine.db, scope.environment.id, now),
    ]);
    const content = html`<h1>Queues &amp; workers</h1>
<p class="muted">As of ${timeCell(now)} · <a href="${scopeHref(scope, "queues")}">refresh</a></p>
${unservedView(scope, unserved, now)}
<h2>Workers (${workers.length} live)</h2>
<table><thead><tr><th>Worker</th><th>Version</th><th>Slots in use</th><th>Last heartbeat</th><th>Started</th><th>Tasks</th></tr></thead><tbody>
${workers.length === 0 ? html`<tr><td colspan="6" class="muted">No worker of this environment is running.</td></tr>` : workers.map((w) => html`<tr>
<td class="mono">${w.id}</td><td>${w.version}</td>
<td>${w.slotsInUse}${w.slots !== null ? html` / ${w.slots}` : null}</td>
<td>${w.lastHeartbeatAt ? formatAge(w.lastHeartbeatAt, now) : html`<span class="muted">—</span>`}</td>
<td>${timeCell(w.startedAt)}</td><td>${w.tasks.join(", ")}</td></tr>`)}
</tbody></table>
<h2>Queues</h2>
<table><thead><tr><th>Queue</th><th>Queued</th><th>Oldest queued</th><th>Running</th><th>Concurrency limit</th><th>Rate limit</th><th>Waiting</th><th>Delayed</th><th>Tasks</th></tr></thead><tbody>
${queues.length === 0 ? html`<tr><td colspan="9" class="muted">No queues yet: a worker registers its tasks' queues when it starts.</td></tr>` : queues.map((q) => html`<tr>
<td><a href="${scopeHref(scope, "runs", { queue: q.queue })}">${q.queue}</a>${q.paused ? html` <span class="badge" title="Paused: none of its runs start until it is resumed">paused</span>` : null}</td><td>${q.queued}</td>
<td>${q.oldestQueuedAt ? formatDuration(Math.max(0, now.getTime() - q.oldestQueuedAt.getTime())) : html`<span class="muted">—</span>`}</td>
<td>${q.running}</td><td>${limitCell(q)}</td><td>${rateLimitCell(q.rateLimit, q.ownRates)}</td><td>${q.waiting}</td><td>${q.delayed}</td><td>${q.tasks.join(", ")}</td></tr>`)}
</tbody></table>`;
    return { title: "Queues & workers", content };
  });
}
