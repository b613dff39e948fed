import type { FastifyInstance } from "fastify";
import { abortBulkAction, createBulkAction, filtersOf, retrieveBulkAction, ValidationError, type BulkActionRow } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { runListFiltersOf } from "../../routes/runs.ts";
import { jsonBlock, statusBadge, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";
import type { DashboardSession } from "@svc/runtime/engine";
import { toRunListQuery, RUN_PAGE_FILTERS, type RunPageFilters } from "./runs.ts";

type BulkParams = { bulkActionId: string };

const bulkHref = (scope: DashboardScope, id: string) => scopeHref(scope, `bulk-actions/${encodeURIComponent(id)}`);

function view(scope: DashboardScope, session: DashboardSession, action: BulkActionRow): Html {
  const pending = action.status === "PENDING";
  const handled = action.succeeded + action.failed;
  const selection = action.filters ? filtersOf(action.filters) : { runIds: action.run_ids };
  return html`<div id="bulk-action"${pending ? html` hx-get="${bulkHref(scope, action.id)}" hx-trigger="every 2s" hx-swap="outerHTML"` : null}>
<h1><span class="mono">${action.id}</span> ${statusBadge(action.status)}</h1>
${pending ? html`<form method="post" action="${bulkHref(scope, action.id)}/abort">${csrfField(session)}<button class="danger" type="submit">Abort</button></form>` : null}
<section class="card"><dl class="facts">
<dt>Action</dt><dd>${action.action === "CANCEL" ? "Cancel" : "Replay"}${action.name ? html` — ${action.name}` : null}</dd>
<dt>Progress</dt><dd>${handled} of ${action.total} handled: <strong>${action.succeeded}</strong> ${action.action === "CANCEL" ? "canceled" : "replayed"}, <strong>${action.failed}</strong> failed</dd>
<dt>Created</dt><dd>${timeCell(action.created_at)}</dd>
<dt>Ended</dt><dd>${timeCell(action.completed_at)}</dd>
</dl>
${pending ? html`<p class="live">Workers work through it a chunk at a time; refreshes every 2 s.</p>` : null}
<h2>Runs</h2>${jsonBlock(selection)}
<p><a href="${scopeHref(scope, "runs")}?bulk=${encodeURIComponent(action.id)}">The runs it ${action.action === "CANCEL" ? "reached" : "made"}</a></p></section>
</div>`;
}

/** POST /dashboard/{ref}/{env}/runs/bulk, and a bulk action's page with its progress and abort (docs/bulk-actions.md). */
export function registerBulkActionPages(dash: FastifyInstance, deps: AppDeps) {
  scopedPost(dash, deps, "runs/bulk", "runs", async ({ scope, body }) => {
    const action = body.action;
    if (action !== "cancel" && action !== "replay") throw new ValidationError("action: cancel or replay");
    const filters: RunPageFilters = {};
    for (const name of RUN_PAGE_FILTERS) {
      const value = typeof body[name] === "string" ? body[name]!.trim() : "";
      if (name !== "q" && value !== "") filters[name] = value;
    }
    if (Object.keys(filters).length === 0) throw new ValidationError("A bulk action needs at least one filter");
    const runFilters = await runListFiltersOf(deps, [scope.environment.id], toRunListQuery(filters, {}));
    const created = await createBulkAction(deps.engine, scope.environment.id, { action: action === "cancel" ? "CANCEL" : "REPLAY", selection: { filters: runFilters } });
    return { redirect: bulkHref(scope, created.id) };
  });

  scopedGet<BulkParams>(dash, deps, "bulk-actions/:bulkActionId", "runs", async ({ scope, params, session }) => {
    const action = await retrieveBulkAction(deps.engine, scope.environment.id, params.bulkActionId);
    const content = view(scope, session, action);
    return { title: action.id, content, fragment: content };
  });

  scopedPost<BulkParams>(dash, deps, "bulk-actions/:bulkActionId/abort", "runs", async ({ scope, params }) => {
    await abortBulkAction(deps.engine, scope.environment.id, params.bulkActionId);
    return { redirect: bulkHref(scope, params.bulkActionId) };
  });
}
