import type { FastifyInstance } from "fastify";
import { getRun, listLiveWorkers, RUN_ID_PREFIX, RUN_STATUSES, ValidationError } from "@svc/runtime/engine";
import type { RunListItem } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { presentRunListItem } from "../../presenters/run-object.ts";
import { RunListQuery, runListPageOf } from "../../routes/runs.ts";
import { formatDuration, statusBadge, tagList, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import type { ActionResult } from "../page.ts";
import { scopedGet } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";
import { waitingForView } from "../waiting-for-view.ts";
import { csrfField } from "../layout.ts";
import type { DashboardSession } from "@svc/runtime/engine";

/** The run list's filters as the page's query string carries them (one name per field of the form); `q` is the id search. */
export const RUN_PAGE_FILTERS = ["q", "status", "task", "tag", "queue", "batch", "schedule", "session", "bulk", "version", "test", "from", "to"] as const;
export type RunPageFilters = Partial<Record<(typeof RUN_PAGE_FILTERS)[number], string>>;
const FILTERS = RUN_PAGE_FILTERS;
type Filters = RunPageFilters;

function first(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value.join(",") : value;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

/** A `datetime-local` value has no zone: the dashboard means UTC, as it shows every time in UTC. */
function instant(value: string | undefined): string | undefined {
  if (!value) return undefined;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? `${value}Z` : value;
}

/** The page's filters as the API's run list query (same validation, same SQL). */
export function toRunListQuery(filters: Filters, cursor: { after?: string; before?: string }): RunListQuery {
  const raw: Record<string, string | undefined> = {
    "filter[status]": filters.status,
    "filter[taskIdentifier]": filters.task,
    "filter[tag]": filters.tag,
    "filter[queue]": filters.queue,
    "filter[batch]": filters.batch,
    "filter[schedule]": filters.schedule,
    "filter[session]": filters.session,
    "filter[bulkAction]": filters.bulk,
    "filter[version]": filters.version,
    "filter[isTest]": filters.test,
    "filter[createdAt][from]": instant(filters.from),
    "filter[createdAt][to]": instant(filters.to),
    "page[after]": cursor.after,
    "page[before]": cursor.before,
  };
  const parsed = RunListQuery.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!parsed.success) throw new ValidationError(`Invalid filter: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  return parsed.data;
}

/** A run id is `run_` and 21 base-36 characters (ids.ts). */
const RUN_ID_LENGTH = 25;

/**
 * The search box's text as a run id prefix: trimmed, lowercased, `run_` added when left out.
 * Null when it cannot start a run id (the page says so).
 */
export function searchPrefix(q: string): string | null {
  const text = q.trim().toLowerCase();
  const prefix = text.startsWith("run_") ? text : `run_${text}`;
  return RUN_ID_PREFIX.test(prefix) ? prefix : null;
}

/** A run of the list with its place in a tree: `parentRunId` and `depth` (0 for a root run). */
type ListedRun = RunListItem & { parentRunId: string | null; depth: number };

function filterForm(scope: DashboardScope, filters: Filters): Html {
  const input = (name: keyof Filters, label: string, placeholder: string) =>
    html`<label>${label}<input name="${name}" value="${filters[name] ?? ""}" placeholder="${placeholder}" spellcheck="false"></label>`;
  return html`<form class="filters" method="get" action="${scopeHref(scope, "runs")}">
${scope.branch ? html`<input type="hidden" name="branch" value="${scope.branch}">` : null}
<label class="search">Run id or prefix<input type="search" name="q" value="${filters.q ?? ""}" placeholder="run_…" spellcheck="false" autocomplete="off"></label>
<label>Status<select name="status"><option value="">any</option>${RUN_STATUSES.map((s) => html`<option${filters.status === s ? html` selected` : null}>${s}</option>`)}</select></label>
${input("task", "Task", "task id")}${input("tag", "Tag", "tag")}${input("queue", "Queue", "queue")}${input("batch", "Batch", "batch_…")}${input("schedule", "Schedule", "sched_…")}${input("session", "Session", "session_… or external id")}${input("bulk", "Bulk action", "bulk_…")}${input("version", "Version", "worker version")}
<label>Test runs<select name="test"><option value="">any</option>${(["true", "false"] as const).map((v) => html`<option value="${v}"${filters.test === v ? html` selected` : null}>${v === "true" ? "only" : "none"}</option>`)}</select></label>
<label>Created from (UTC)<input type="datetime-local" name="from" value="${filters.from ?? ""}"></label>
<label>to (UTC)<input type="datetime-local" name="to" value="${filters.to ?? ""}"></label>
<button type="submit">Apply</button> <a href="${scopeHref(scope, "runs")}">Clear</a>
</form>`;
}

/**
 * The runs page's "Cancel all matching" / "Replay all matching": its filters as hidden fields, so
 * the action is over what the page lists (the id search aside). Shown only with a filter given.
 */
function bulkActionForm(scope: DashboardScope, session: DashboardSession, filters: Filters): Html | null {
  const given = FILTERS.filter((name) => name !== "q" && filters[name] !== undefined);
  if (given.length === 0 || filters.q !== undefined) return null;
  return html`<form class="bulk" method="post" action="${scopeHref(scope, "runs/bulk")}">${csrfField(session)}
${given.map((name) => html`<input type="hidden" name="${name}" value="${filters[name]}">`)}
<span class="muted">Every run matching these filters (not only this page):</span>
<button class="danger" type="submit" name="action" value="cancel">Cancel all matching</button>
<button type="submit" name="action" value="replay">Replay all matching</button>
</form>`;
}

function runRow(scope: DashboardScope, run: ListedRun, unserved: boolean): Html {
  const depth = Math.min(run.depth, 4);
  return html`<tr${run.parentRunId ? html` class="child depth-${depth}" data-parent="${run.parentRunId}"` : null}>
<td><a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(run.id)}`)}">${run.id}</a>${run.parentRunId ? html`<div class="child-of">↳ child of <a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(run.parentRunId)}`)}">${run.parentRunId}</a></div>` : null}</td>
<td>${run.taskIdentifier}${unserved ? html` <span class="badge unserved" title="No live worker of this environment serves this task: the run stays queued until one does">no worker</span>` : null}</td>
<td>${statusBadge(run.status)}</td>
<td>${timeCell(run.createdAt)}</td>
<td>${run.durationMs ? formatDuration(run.durationMs) : html`<span class="muted">—</span>`}</td>
<td>${tagList(run.tags)}</td>
<td>${waitingForView(scope, run.waitingFor ?? [])}</td>
</tr>`;
}

/**
 * GET /dashboard/{ref}/{env}/runs: filters, a cursor page of 25, refreshed every 3 s while on the
 * first page. `q` searches by run id: a whole id of this environment opens that run, a prefix
 * lists the runs whose id starts with it (from any time, ids being time-ordered), with the other filters.
 */
export function registerRunPages(dash: FastifyInstance, deps: AppDeps) {
  scopedGet<object, Record<string, unknown>>(dash, deps, "runs", "runs", async ({ scope, query, session }): Promise<ActionResult> => {
    const filters: Filters = {};
    for (const name of FILTERS) {
      const value = first(query[name]);
      if (value !== undefined) filters[name] = value;
    }
    const cursor = { after: first(query.after), before: first(query.before) };
    let idPrefix: string | undefined;
    if (filters.q !== undefined) {
      const prefix = searchPrefix(filters.q);
      if (prefix === null) {
        const problem = html`<p class="problem" role="alert">“${filters.q}” is not a run id or the start of one: run ids are run_ followed by lowercase letters and digits.</p>`;
        return { title: "Runs", content: html`<h1>Runs</h1>${filterForm(scope, filters)}${problem}`, status: 400 };
      }
      if (prefix.length === RUN_ID_LENGTH && !cursor.after && !cursor.before && (await getRun(deps.engine.db, prefix, scope.environment.id))) {
        return { redirect: scopeHref(scope, `runs/${encodeURIComponent(prefix)}`) };
      }
      idPrefix = prefix;
    }
    const runQuery = toRunListQuery(filters, cursor);
    const [page, workers] = await Promise.all([
      runListPageOf<ListedRun>(deps, [scope.environment.id], runQuery, { idPrefix }, (row) => ({ ...presentRunListItem(row, row.waits), parentRunId: row.parent_run_id, depth: row.depth })),
      listLiveWorkers(deps.engine.db, scope.environment.id, deps.engine.clock.now()),
    ]);
    // Queued runs of a task no live worker serves stay queued: flagged (the queues page counts them all).
    const served = new Set(workers.flatMap((w) => w.tasks));
    // PENDING_VERSION: a queued run of a task no worker of the environment ever registered.
    const unserved = (run: ListedRun) => (run.status === "QUEUED" || run.status === "PENDING_VERSION") && !served.has(run.taskIdentifier);
    const unservedTasks = [...new Set(page.data.filter(unserved).map((r) => r.taskIdentifier))].sort();
    const live = !cursor.after && !cursor.before;
    const here = scopeHref(scope, "runs", { ...filters, after: cursor.after, before: cursor.before });
    const empty = idPrefix ? `No run of this environment has an id starting with ${idPrefix}${Object.keys(filters).length > 1 ? " and matches the filters" : ""}.` : `No runs match${Object.keys(filters).length === 0 ? " in the last 7 days" : ""}.`;
    const table = html`<div id="runs-table"${live ? html` hx-get="${here}" hx-trigger="every 3s" hx-swap="outerHTML"` : null}>
${live ? html`<p class="live">Live: refreshes every 3 s</p>` : null}
${unservedTasks.length > 0 ? html`<p class="notice unserved">Queued runs here are of ${unservedTasks.length === 1 ? "a task" : "tasks"} no live worker of this environment serves (${unservedTasks.join(", ")}): they stay queued until a worker with ${unservedTasks.length === 1 ? "it" : "them"} starts. <a href="${scopeHref(scope, "queues")}">Queues &amp; workers</a></p>` : null}
<div class="scroll"><table class="runs"><thead><tr><th>Run</th><th>Task</th><th>Status</th><th>Created</th><th>Duration</th><th>Tags</th><th>Waiting for</th></tr></thead>
<tbody>${page.data.length === 0 ? html`<tr><td colspan="7" class="muted">${empty}</td></tr>` : page.data.map((run) => runRow(scope, run, unserved(run)))}</tbody></table></div>
<div class="pager">
${page.pagination.previous ? html`<a href="${scopeHref(scope, "runs", { ...filters, before: page.pagination.previous })}">← Newer</a>` : null}
${page.pagination.next ? html`<a href="${scopeHref(scope, "runs", { ...filters, after: page.pagination.next })}">Older →</a>` : null}
</div>
</div>`;
    return {
      title: "Runs",
      content: html`<h1>Runs</h1>${filterForm(scope, filters)}${bulkActionForm(scope, session, filters)}${table}`,
      fragment: table,
    };
  });
}
