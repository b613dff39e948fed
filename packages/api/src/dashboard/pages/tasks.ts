import type { FastifyInstance } from "fastify";
import { listLiveWorkers, NotFoundError, stringifySuperjson, taskOverview, triggerRun, ValidationError, type TaskOverview, type TaskRecentRun } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { packetAsJson } from "../../presenters/packet-json.ts";
import { formatDuration, statusBadge, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost, type PageContext, type PageResult } from "../page.ts";
import { payloadTextarea, prefillText, readPayloadField } from "../payload-form.ts";
import { runHref, scopeHref, type DashboardScope } from "../scope.ts";

type TaskParams = { taskId: string };

/** Runs shown per task: in the list, and on a task's page. */
const LIST_RUNS = 5;
const TASK_RUNS = 10;

const taskHref = (scope: DashboardScope, taskId: string) => scopeHref(scope, `tasks/${encodeURIComponent(taskId)}`);

function recentRuns(scope: DashboardScope, runs: TaskRecentRun[]): Html {
  if (runs.length === 0) return html`<span class="muted">no runs yet</span>`;
  return html`<ul class="recent-runs">${runs.map((run) => html`<li><a href="${runHref(scope, run.id)}" title="${run.id}">${statusBadge(run.status)}</a> ${timeCell(run.createdAt)}${run.isTest ? html` <span class="tag">test</span>` : null}</li>`)}</ul>`;
}

/** A scheduled task's payload as a schedule would send it (engine/schedules/fire-due-schedules.ts), for the tick `now`. */
function scheduledExample(now: Date): string {
  return JSON.stringify({ scheduleId: "sched_test", type: "IMPERATIVE", timestamp: now.toISOString(), timezone: "UTC", upcoming: [] }, null, 2);
}

const isInstant = (value: unknown): value is string => typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(new Date(value).getTime());

/**
 * A scheduled task receives `timestamp`, `lastTimestamp` and `upcoming` as Dates (superjson, as a
 * schedule's runs carry them): the Test form's ISO strings in those fields become Dates; the rest
 * stays as typed.
 */
function scheduledPayload(text: string): string {
  const value = JSON.parse(text) as unknown;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return stringifySuperjson(value);
  const fields = { ...(value as Record<string, unknown>) };
  for (const key of ["timestamp", "lastTimestamp"]) if (isInstant(fields[key])) fields[key] = new Date(fields[key]);
  if (Array.isArray(fields.upcoming)) fields.upcoming = fields.upcoming.map((d) => (isInstant(d) ? new Date(d) : d));
  return stringifySuperjson(fields);
}

/** What the Test form starts from: the newest run's payload as JSON, or `{}` (a scheduled task: a tick's payload), and why. */
function startingPayload(task: TaskOverview, now: Date): { text: string; note: string | null } {
  if (!task.lastPayload) return task.kind === "SCHEDULED" ? { text: scheduledExample(now), note: "Starts from a schedule's payload for now." } : { text: "{}", note: null };
  if (task.lastPayload.type === "application/store") return { text: "{}", note: "The last run's payload was offloaded (too large to edit here)." };
  const text = prefillText(packetAsJson(task.lastPayload));
  return text === null ? { text: "{}", note: "The last run's payload is too large to edit here." } : { text, note: "Starts from the last run's payload." };
}

async function findTask(deps: AppDeps, scope: DashboardScope, taskId: string): Promise<TaskOverview> {
  const [task] = await taskOverview(deps.engine.db, scope.environment.id, { recentRuns: TASK_RUNS, taskIdentifiers: [taskId] });
  if (!task) throw new NotFoundError("Task not found: no worker of this environment has registered it");
  return task;
}

async function taskPage(deps: AppDeps, { scope, params, session, now }: PageContext<TaskParams & { projectRef: string; env: string }>, form?: { text: string; problem: string; status: number }): Promise<PageResult> {
  const task = await findTask(deps, scope, params.taskId);
  const live = (await listLiveWorkers(deps.engine.db, scope.environment.id, now)).some((w) => w.tasks.includes(task.taskIdentifier));
  const start = startingPayload(task, now);
  const content = html`<h1>${task.taskIdentifier}</h1>
<div class="grid2">
<section class="card"><h2>Task</h2><dl class="facts">
<dt>Queue</dt><dd><a href="${scopeHref(scope, "runs", { queue: task.queue })}">${task.queue}</a></dd>
<dt>Kind</dt><dd>${task.kind}</dd>
<dt>Concurrency limit</dt><dd>${task.concurrencyLimit ?? html`<span class="muted">unlimited</span>`}</dd>
<dt>Rate limit</dt><dd>${task.rateLimit ? html`${task.rateLimit.limit} starts per ${formatDuration(task.rateLimit.periodMs)}` : html`<span class="muted">none</span>`}</dd>
<dt>Holds limits</dt><dd>${task.concurrencyLimits.length > 0 ? task.concurrencyLimits.join(", ") : html`<span class="muted">none</span>`}</dd>
<dt>Registered by</dt><dd>version ${task.workerVersion}, ${timeCell(task.registeredAt)}</dd>
<dt>Live worker</dt><dd>${live ? "yes" : html`<span class="problem-text">none running: a run waits until a worker with this task starts</span>`}</dd>
</dl></section>
<section class="card"><h2>Test</h2>
<p class="muted">Triggers a test run of this task with this payload.${start.note && !form ? ` ${start.note}` : ""}</p>
<form method="post" action="${taskHref(scope, task.taskIdentifier)}/test">${csrfField(session)}
${payloadTextarea("test-payload", form?.text ?? start.text, form?.problem)}
<div class="actions"><button type="submit">Run test</button></div>
</form></section>
</div>
<section class="card"><h2>Last runs</h2>
<table><thead><tr><th>Run</th><th>Status</th><th>Created</th><th>Finished</th></tr></thead><tbody>
${task.recentRuns.length === 0 ? html`<tr><td colspan="4" class="muted">No runs yet.</td></tr>` : task.recentRuns.map((run) => html`<tr><td><a class="mono" href="${runHref(scope, run.id)}">${run.id}</a>${run.isTest ? html` <span class="tag">test</span>` : null}</td><td>${statusBadge(run.status)}</td><td>${timeCell(run.createdAt)}</td><td>${timeCell(run.finishedAt)}</td></tr>`)}
</tbody></table>
<p><a href="${scopeHref(scope, "runs", { task: task.taskIdentifier })}">All runs of ${task.taskIdentifier} →</a></p></section>`;
  return { title: task.taskIdentifier, content, status: form?.status ?? 200 };
}

/**
 * GET /dashboard/{ref}/{env}/tasks: the tasks the environment's workers registered, each with its
 * queue and last runs; a task's page with a Test form that triggers a test run with a typed payload.
 */
export function registerTaskPages(dash: FastifyInstance, deps: AppDeps) {
  scopedGet(dash, deps, "tasks", "tasks", async ({ scope, now }) => {
    const [tasks, workers] = await Promise.all([taskOverview(deps.engine.db, scope.environment.id, { recentRuns: LIST_RUNS }), listLiveWorkers(deps.engine.db, scope.environment.id, now)]);
    const served = new Set(workers.flatMap((w) => w.tasks));
    const content = html`<h1>Tasks</h1>
<table class="tasks"><thead><tr><th>Task</th><th>Queue</th><th>Kind</th><th>Live worker</th><th>Last runs</th><th></th></tr></thead><tbody>
${tasks.length === 0 ? html`<tr><td colspan="6" class="muted">No tasks yet: a worker registers its tasks when it starts.</td></tr>` : tasks.map((task) => html`<tr data-task="${task.taskIdentifier}">
<td><a href="${taskHref(scope, task.taskIdentifier)}">${task.taskIdentifier}</a></td>
<td><a href="${scopeHref(scope, "runs", { queue: task.queue })}">${task.queue}</a></td>
<td>${task.kind}</td>
<td>${served.has(task.taskIdentifier) ? "yes" : html`<span class="problem-text">none</span>`}</td>
<td>${recentRuns(scope, task.recentRuns)}</td>
<td><a class="button secondary" href="${taskHref(scope, task.taskIdentifier)}">Test…</a></td></tr>`)}
</tbody></table>`;
    return { title: "Tasks", content };
  });

  scopedGet<TaskParams>(dash, deps, "tasks/:taskId", "tasks", (ctx) => taskPage(deps, ctx));

  scopedPost<TaskParams>(dash, deps, "tasks/:taskId/test", "tasks", async (ctx) => {
    const { scope, params, body } = ctx;
    // An unknown task is a 404 before anything else: the form only exists for registered tasks.
    const task = await findTask(deps, scope, params.taskId);
    const field = readPayloadField(body.payload);
    if (!field.ok) return taskPage(deps, { ...ctx, query: {} }, { text: body.payload ?? "", problem: field.problem, status: field.status });
    let result;
    try {
      result =
        task.kind === "SCHEDULED"
          ? await triggerRun(deps.engine, scope.environment, params.taskId, scheduledPayload(field.text), { payloadType: "application/super+json", test: true })
          : await triggerRun(deps.engine, scope.environment, params.taskId, field.text, { payloadType: "application/json", test: true });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return taskPage(deps, { ...ctx, query: {} }, { text: field.text, problem: error.message, status: 400 });
    }
    if (!result.isCached) deps.metrics?.runsTriggered.inc();
    return { redirect: runHref(scope, result.id, { notice: "tested" }) };
  });
}
