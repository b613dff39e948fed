import type { FastifyInstance } from "fastify";
import { completeToken, getWaitpoint, listTokenRows, NotFoundError, parseJsonText, parseTokenListFilter, runsWaitingOn, ValidationError, type WaitpointRow } from "@svc/runtime/engine";
import { ListWaitpointTokensFilterQuery } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { CursorPageQuery, keysetPage } from "../../http/pagination.ts";
import { presentTokenDetail, presentTokenItem } from "../../presenters/waitpoint-token.ts";
import { jsonBlock, statusBadge, tagList, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost, type PageContext } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";

type TokenParams = { id: string };
const PAGE_SIZE = 25;
const TokenListQuery = CursorPageQuery.extend(ListWaitpointTokensFilterQuery.shape);
const NOTICES: Record<string, string> = { completed: "Token completed: the runs waiting on it resume.", "already-finished": "The token had already completed or timed out; nothing changed." };

const tokenHref = (scope: DashboardScope, id: string, query: Record<string, string> = {}) => scopeHref(scope, `tokens/${encodeURIComponent(id)}`, query);
const text = (value: unknown) => (typeof value === "string" && value.trim() !== "" ? value.trim() : undefined);

function filterForm(scope: DashboardScope, f: Record<string, string | undefined>): Html {
  return html`<form class="filters" method="get" action="${scopeHref(scope, "tokens")}">
${scope.branch ? html`<input type="hidden" name="branch" value="${scope.branch}">` : null}
<label>Status<select name="status"><option value="">any</option>${["WAITING", "COMPLETED", "TIMED_OUT"].map((s) => html`<option${f.status === s ? html` selected` : null}>${s}</option>`)}</select></label>
<label>Tag<input name="tag" value="${f.tag ?? ""}"></label>
<label>Idempotency key<input name="key" value="${f.key ?? ""}"></label>
<label>Period<input name="period" value="${f.period ?? ""}" placeholder="e.g. 1d, 7d"></label>
<button type="submit">Apply</button> <a href="${scopeHref(scope, "tokens")}">Clear</a>
</form>`;
}

/** The token form: output JSON in a textarea, then a confirmation step showing what will be sent. */
function completeForm(scope: DashboardScope, token: WaitpointRow, csrf: Html, output: string, problem?: string): Html {
  return html`<section class="card"><h2>Complete this token</h2>
${problem ? html`<p class="problem" role="alert">${problem}</p>` : null}
<form method="post" action="${tokenHref(scope, token.id)}/complete">${csrf}
<label for="token-output">Output (JSON): the value <code>wait.forToken</code> returns to the waiting runs</label>
<textarea id="token-output" name="output" spellcheck="false">${output}</textarea>
<div class="actions"><button type="submit">Review…</button></div>
</form></section>`;
}

async function tokenDetail(deps: AppDeps, { scope, params, query, session }: PageContext<TokenParams & { projectRef: string; env: string }>, form?: { output: string; problem: string }) {
  const row = await getWaitpoint(deps.engine.db, params.id, scope.environment.id);
  if (!row || row.type !== "MANUAL") throw new NotFoundError("Waitpoint not found");
  const token = presentTokenDetail(row, "");
  const waiting = await runsWaitingOn(deps.engine.db, scope.environment.id, row.id);
  const notice = typeof query.notice === "string" ? NOTICES[query.notice] : undefined;
  let output: unknown = token.output;
  if (typeof token.output === "string") {
    try {
      output = JSON.parse(token.output);
    } catch {
      output = token.output;
    }
  }
  const content = html`<h1><span class="mono">${token.id}</span> ${statusBadge(token.status)}</h1>
${notice ? html`<p class="notice">${notice}</p>` : null}
<div class="grid2"><section class="card"><dl class="facts">
<dt>Status</dt><dd>${statusBadge(token.status)}</dd><dt>Created</dt><dd>${timeCell(token.createdAt)}</dd>
<dt>Times out</dt><dd>${timeCell(token.timeoutAt)}</dd><dt>Completed</dt><dd>${timeCell(token.completedAt)}</dd>
<dt>Tags</dt><dd>${tagList(token.tags)}</dd>${token.idempotencyKey ? html`<dt>Idempotency key</dt><dd class="mono">${token.idempotencyKey}</dd>` : null}
</dl></section>
<section class="card"><h2>Runs waiting on it</h2>${waiting.length === 0 ? html`<p class="muted">None.</p>` : html`<ul>${waiting.map((run) => html`<li><a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(run.id)}`)}">${run.id}</a> ${run.taskIdentifier} ${statusBadge(run.status)} <span class="muted">since ${timeCell(run.since)}</span></li>`)}</ul>`}
${token.status !== "WAITING" ? html`<h2>${token.outputIsError ? "Error" : "Output"}</h2>${jsonBlock(output)}` : null}</section></div>
${token.status === "WAITING" ? completeForm(scope, row, csrfField(session), form?.output ?? "{}", form?.problem) : null}`;
  return { title: token.id, content, status: form ? 400 : 200 };
}

/** Waitpoint tokens: list with filters, a token's page, and completing a WAITING one (JSON, then a confirmation). */
export function registerTokenPages(dash: FastifyInstance, deps: AppDeps) {
  scopedGet(dash, deps, "tokens", "tokens", async ({ scope, query, now }) => {
    const f = { status: text(query.status), tag: text(query.tag), key: text(query.key), period: text(query.period) };
    const parsed = TokenListQuery.safeParse({
      ...(f.status ? { "filter[status]": f.status } : {}),
      ...(f.tag ? { "filter[tags]": f.tag } : {}),
      ...(f.key ? { "filter[idempotencyKey]": f.key } : {}),
      ...(f.period ? { "filter[createdAt][period]": f.period } : {}),
      ...(text(query.after) ? { "page[after]": text(query.after) } : {}),
      ...(text(query.before) ? { "page[before]": text(query.before) } : {}),
    });
    if (!parsed.success) throw new ValidationError(`Invalid filter: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
    const filter = parseTokenListFilter(parsed.data, now);
    const page = await keysetPage(parsed.data, PAGE_SIZE, (keyset, direction, limit) => listTokenRows(deps.engine.db, scope.environment.id, filter, keyset, direction, limit), (row) => presentTokenItem(row, ""));
    const content = html`<h1>Waitpoint tokens</h1>${filterForm(scope, f)}
<table><thead><tr><th>Token</th><th>Status</th><th>Created</th><th>Times out</th><th>Completed</th><th>Tags</th></tr></thead><tbody>
${page.data.length === 0 ? html`<tr><td colspan="6" class="muted">No tokens match.</td></tr>` : page.data.map((t) => html`<tr><td><a class="mono" href="${tokenHref(scope, t.id)}">${t.id}</a></td><td>${statusBadge(t.status)}</td><td>${timeCell(t.createdAt)}</td><td>${timeCell(t.timeoutAt)}</td><td>${timeCell(t.completedAt)}</td><td>${tagList(t.tags)}</td></tr>`)}
</tbody></table>
<div class="pager">${page.pagination.previous ? html`<a href="${scopeHref(scope, "tokens", { ...f, before: page.pagination.previous })}">← Newer</a>` : null}
${page.pagination.next ? html`<a href="${scopeHref(scope, "tokens", { ...f, after: page.pagination.next })}">Older →</a>` : null}</div>`;
    return { title: "Waitpoint tokens", content };
  });

  scopedGet<TokenParams>(dash, deps, "tokens/:id", "tokens", (ctx) => tokenDetail(deps, ctx));

  scopedPost<TokenParams>(dash, deps, "tokens/:id/complete", "tokens", async (ctx) => {
    const { scope, params, body, session } = ctx;
    const outputText = typeof body.output === "string" ? body.output : "";
    let output: unknown;
    try {
      output = outputText.trim() === "" ? undefined : parseJsonText(outputText, "Output");
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return tokenDetail(deps, { ...ctx, query: {} }, { output: outputText, problem: `${error.message}. Fix it and review again.` });
    }
    if (body.confirm !== "yes") {
      const row = await getWaitpoint(deps.engine.db, params.id, scope.environment.id);
      if (!row || row.type !== "MANUAL") throw new NotFoundError("Waitpoint not found");
      const content = html`<h1>Complete <span class="mono">${row.id}</span>?</h1>
<section class="card"><p>The runs waiting on this token resume with this output. A token completes once: this cannot be undone.</p>${jsonBlock(output ?? null)}
<form method="post" action="${tokenHref(scope, row.id)}/complete">${csrfField(session)}<input type="hidden" name="output" value="${outputText}"><input type="hidden" name="confirm" value="yes">
<div class="actions"><button type="submit">Complete token</button> <a href="${tokenHref(scope, row.id)}">Cancel</a></div></form></section>`;
      return { title: "Confirm", content };
    }
    const result = await completeToken(deps.engine, deps.engine.db, params.id, output, { environmentId: scope.environment.id });
    return { redirect: tokenHref(scope, params.id, { notice: result.changed ? "completed" : "already-finished" }) };
  });
}

