import type { FastifyInstance } from "fastify";
import { listSchedules, presentSchedule, setScheduleActivation, UnprocessableError, upcomingTicks } from "@svc/runtime/engine";
import { ListSchedulesQuery, ScheduleParams, type ScheduleObject } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { statusBadge, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost, type PageContext, type PageResult } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";

type ListQuery = { page?: number; perPage?: number };

/** Messages a redirect may ask the list to show (by code: the page never echoes text from the URL). */
const NOTICES: Record<string, string> = {
  activated: "The schedule is active: it fires from its next tick after now (ticks missed while it was inactive never fire).",
  deactivated: "The schedule is inactive: it starts no runs until it is activated again.",
};

/** How many ticks after the next one a row lists under "later". */
const LATER_TICKS = 4;

/** The list's page as the API reads it (same zod schema, so the same 400 for `page=0` or `page=x`). */
function listQuery(query: Record<string, unknown>): ListQuery {
  return ListSchedulesQuery.parse({ page: query.page, perPage: query.perPage });
}

/** The page and page size as query values, for links and redirects that come back to the same page. */
function pageParams(query: ListQuery): Record<string, string | undefined> {
  return { page: query.page && query.page > 1 ? String(query.page) : undefined, perPage: query.perPage ? String(query.perPage) : undefined };
}

/** "2025-06-02 02:30" in the schedule's own timezone, beside the UTC time every page shows. */
function inTimezone(date: Date, timezone: string): Html | null {
  if (timezone === "UTC") return null;
  const local = new Intl.DateTimeFormat("sv-SE", { timeZone: timezone, dateStyle: "short", timeStyle: "short" }).format(date);
  return html` <span class="muted">(${local} ${timezone})</span>`;
}

function tick(date: Date, timezone: string): Html {
  return html`${timeCell(date)}${inTimezone(date, timezone)}`;
}

/** The ticks after `next`; none when the stored cron cannot be iterated (presentSchedule treats it the same way). */
function laterTicks(schedule: ScheduleObject, next: Date): Date[] {
  try {
    return upcomingTicks(schedule.generator.expression, schedule.timezone, next, LATER_TICKS);
  } catch {
    return [];
  }
}

function nextRuns(schedule: ScheduleObject): Html {
  if (!schedule.nextRun) return html`<span class="muted">—</span>`;
  const next = new Date(schedule.nextRun);
  // The API shows an inactive schedule's next tick too; it does not fire, so say so.
  if (!schedule.active) return html`<span class="muted">none while inactive (would be ${timeCell(next)})</span>`;
  const later = laterTicks(schedule, next);
  return html`${tick(next, schedule.timezone)}
${later.length > 0 ? html`<details><summary class="muted">then</summary>${later.map((t) => html`<div>${tick(t, schedule.timezone)}</div>`)}</details>` : null}`;
}

function activationForm(scope: DashboardScope, schedule: ScheduleObject, csrf: Html, query: ListQuery): Html {
  const action = schedule.active ? "deactivate" : "activate";
  return html`<form method="post" action="${scopeHref(scope, `schedules/${encodeURIComponent(schedule.id)}/${action}`, pageParams(query))}">${csrf}<button${schedule.active ? html` class="secondary"` : null} type="submit">${schedule.active ? "Deactivate" : "Activate"}</button></form>`;
}

function scheduleRow(scope: DashboardScope, schedule: ScheduleObject, csrf: Html, query: ListQuery): Html {
  const declarative = schedule.type === "DECLARATIVE";
  return html`<tr>
<td><span class="mono">${schedule.id}</span>${schedule.deduplicationKey ? html`<div class="muted">key <span class="mono">${schedule.deduplicationKey}</span></div>` : null}</td>
<td>${schedule.task}</td>
<td><code>${schedule.generator.expression}</code><div class="muted">${schedule.generator.description}</div></td>
<td>${schedule.timezone}</td>
<td>${schedule.externalId ?? html`<span class="muted">—</span>`}</td>
<td>${statusBadge(schedule.active ? "ACTIVE" : "INACTIVE")}</td>
<td>${nextRuns(schedule)}</td>
<td>${declarative ? html`declarative<div class="muted">cron option of schedules.task</div>` : "imperative"}</td>
<td><a href="${scopeHref(scope, "runs", { schedule: schedule.id })}">Runs</a></td>
<td>${declarative ? html`<span class="muted">change it in the task's code</span>` : activationForm(scope, schedule, csrf, query)}</td>
</tr>`;
}

function pager(scope: DashboardScope, query: ListQuery, currentPage: number, totalPages: number, count: number): Html {
  const to = (page: number) => scopeHref(scope, "schedules", pageParams({ ...query, page }));
  return html`<div class="pager">
${currentPage > 1 ? html`<a href="${to(Math.min(currentPage - 1, Math.max(totalPages, 1)))}">← Previous</a>` : null}
<span class="muted">Page ${currentPage} of ${Math.max(totalPages, 1)} · ${count} schedule${count === 1 ? "" : "s"}</span>
${currentPage < totalPages ? html`<a href="${to(currentPage + 1)}">Next →</a>` : null}
</div>`;
}

/** The list page: one offset page of the environment's schedules, as GET /api/v1/schedules pages them. */
async function listPage(deps: AppDeps, ctx: Pick<PageContext, "scope" | "session" | "now">, query: ListQuery, message: { notice?: string; problem?: string } = {}): Promise<PageResult> {
  const { scope, session, now } = ctx;
  const page = await listSchedules(deps.engine, scope.environment, query);
  const schedules = page.rows.map((row) => presentSchedule(row, scope.environment, now));
  const csrf = csrfField(session);
  const empty = page.count === 0 ? "No schedules in this environment yet." : "No schedules on this page.";
  const content = html`<h1>Schedules</h1>
${message.notice ? html`<p class="notice">${message.notice}</p>` : null}
${message.problem ? html`<p class="problem">${message.problem}</p>` : null}
<table><thead><tr><th>Schedule</th><th>Task</th><th>Cron</th><th>Timezone</th><th>External id</th><th>State</th><th>Next run (UTC)</th><th>Kind</th><th>Runs</th><th></th></tr></thead>
<tbody>${schedules.length === 0 ? html`<tr><td colspan="10" class="muted">${empty}</td></tr>` : schedules.map((s) => scheduleRow(scope, s, csrf, query))}</tbody></table>
${pager(scope, query, page.currentPage, page.totalPages, page.count)}`;
  return { title: "Schedules", content };
}

/** GET /dashboard/{ref}/{env}/schedules and the activate / deactivate actions (imperative schedules only, as over the API). */
export function registerSchedulesPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet<object, Record<string, unknown>>(dash, deps, "schedules", "schedules", async (ctx) => {
    const notice = typeof ctx.query.notice === "string" ? NOTICES[ctx.query.notice] : undefined;
    return listPage(deps, ctx, listQuery(ctx.query), { notice });
  });

  for (const action of ["activate", "deactivate"] as const) {
    scopedPost<{ id: string }>(dash, deps, `schedules/:id/${action}`, "schedules", async (ctx) => {
      const { id } = ScheduleParams.parse({ id: ctx.params.id });
      // The page to come back to; a broken one only loses the place, it never blocks the action.
      const parsed = ListSchedulesQuery.safeParse({ page: ctx.query.page, perPage: ctx.query.perPage });
      const query = parsed.success ? parsed.data : {};
      try {
        await setScheduleActivation(deps.engine, ctx.scope.environment, id, action === "activate");
      } catch (error) {
        // What the API answers 422 (a declarative schedule) is shown on the list, with the API's words.
        if (!(error instanceof UnprocessableError)) throw error;
        return { ...(await listPage(deps, ctx, query, { problem: error.message })), status: 422 };
      }
      return { redirect: scopeHref(ctx.scope, "schedules", { ...pageParams(query), notice: action === "activate" ? "activated" : "deactivated" }) };
    });
  }
}
