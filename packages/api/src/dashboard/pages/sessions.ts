import type { FastifyInstance } from "fastify";
import { listSessionRows, parseSessionListFilter, sessionStatus, ValidationError, type SessionRow } from "@svc/runtime/engine";
import { ListSessionsFilterQuery, SessionStatus } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { CursorPageQuery, keysetPage } from "../../http/pagination.ts";
import { statusBadge, tagList, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { scopedGet } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";
import { registerSessionPage, sessionHref } from "./session.ts";
import { registerSessionRecordStream } from "./session-stream.ts";

const SESSION_LIST_PAGE_SIZE = 25;

/** The session list's filters as the page's query string carries them (one name per field of the form). */
const FILTERS = ["status", "type", "task", "tag", "externalId"] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

const SessionListQuery = CursorPageQuery.extend(ListSessionsFilterQuery.shape);
type SessionListQuery = ReturnType<typeof SessionListQuery.parse>;

function first(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value.join(",") : value;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

/** The page's filters as the API's session list query (same validation, same SQL). */
export function toSessionListQuery(filters: Filters, cursor: { after?: string; before?: string }): SessionListQuery {
  const raw: Record<string, string | undefined> = {
    "filter[status]": filters.status,
    "filter[type]": filters.type,
    "filter[taskIdentifier]": filters.task,
    "filter[tags]": filters.tag,
    "filter[externalId]": filters.externalId,
    "page[after]": cursor.after,
    "page[before]": cursor.before,
  };
  const parsed = SessionListQuery.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!parsed.success) throw new ValidationError(`Invalid filter: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  return parsed.data;
}

function filterForm(scope: DashboardScope, filters: Filters): Html {
  const input = (name: keyof Filters, label: string, placeholder: string) =>
    html`<label>${label}<input name="${name}" value="${filters[name] ?? ""}" placeholder="${placeholder}" spellcheck="false"></label>`;
  return html`<form class="filters" method="get" action="${scopeHref(scope, "sessions")}">
${scope.branch ? html`<input type="hidden" name="branch" value="${scope.branch}">` : null}
<label>Status<select name="status"><option value="">any</option>${SessionStatus.options.map((s) => html`<option${filters.status === s ? html` selected` : null}>${s}</option>`)}</select></label>
${input("type", "Type", "chat.agent")}${input("task", "Task", "task id")}${input("tag", "Tag", "tag")}${input("externalId", "External id", "external id")}
<button type="submit">Apply</button> <a href="${scopeHref(scope, "sessions")}">Clear</a>
</form>`;
}

function sessionRow(scope: DashboardScope, row: SessionRow, now: Date): Html {
  return html`<tr>
<td><a class="mono" href="${sessionHref(scope, row.id)}">${row.id}</a></td>
<td class="mono">${row.external_id ?? html`<span class="muted">—</span>`}</td>
<td>${row.type}</td>
<td>${row.task_identifier}</td>
<td>${statusBadge(sessionStatus(row, now))}</td>
<td>${timeCell(row.created_at)}</td>
<td>${timeCell(row.expires_at)}</td>
<td>${tagList(row.tags)}</td>
</tr>`;
}

/**
 * GET /dashboard/{ref}/{env}/sessions: filters, a cursor page of 25 (newest first), refreshed
 * every 3 s while on the first page; and the session page with its live records.
 */
export function registerSessionPages(dash: FastifyInstance, deps: AppDeps) {
  scopedGet<object, Record<string, unknown>>(dash, deps, "sessions", "sessions", async ({ scope, query, now }) => {
    const filters: Filters = {};
    for (const name of FILTERS) {
      const value = first(query[name]);
      if (value !== undefined) filters[name] = value;
    }
    const cursor = { after: first(query.after), before: first(query.before) };
    const listQuery = toSessionListQuery(filters, cursor);
    const filter = parseSessionListFilter(listQuery, now);
    const page = await keysetPage(
      listQuery,
      SESSION_LIST_PAGE_SIZE,
      (keyset, direction, limit) => listSessionRows(deps.engine.db, scope.environment.id, filter, now, keyset, direction, limit),
      (row) => row,
    );
    const live = !cursor.after && !cursor.before;
    const here = scopeHref(scope, "sessions", { ...filters, after: cursor.after, before: cursor.before });
    const table = html`<div id="sessions-table"${live ? html` hx-get="${here}" hx-trigger="every 3s" hx-swap="outerHTML"` : null}>
${live ? html`<p class="live">Live: refreshes every 3 s</p>` : null}
<table><thead><tr><th>Session</th><th>External id</th><th>Type</th><th>Task</th><th>Status</th><th>Created</th><th>Expires</th><th>Tags</th></tr></thead>
<tbody>${page.data.length === 0 ? html`<tr><td colspan="8" class="muted">No sessions match.</td></tr>` : page.data.map((row) => sessionRow(scope, row, now))}</tbody></table>
<div class="pager">
${page.pagination.previous ? html`<a href="${scopeHref(scope, "sessions", { ...filters, before: page.pagination.previous })}">← Newer</a>` : null}
${page.pagination.next ? html`<a href="${scopeHref(scope, "sessions", { ...filters, after: page.pagination.next })}">Older →</a>` : null}
</div>
</div>`;
    return {
      title: "Sessions",
      content: html`<h1>Sessions</h1>${filterForm(scope, filters)}${table}`,
      fragment: table,
    };
  });
  registerSessionPage(dash, deps);
  registerSessionRecordStream(dash, deps);
}
