import type { FastifyInstance } from "fastify";
import { findSession, NotFoundError, readLastRecordPreviews, sessionStatus, ValidationError, type SessionRow } from "@svc/runtime/engine";
import { SessionRef, type RunListItem } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { runListPage } from "../../routes/runs.ts";
import { jsonBlock, statusBadge, tagList, timeCell } from "../format.ts";
import { html, type Html } from "../html.ts";
import { scopedGet } from "../page.ts";
import { scopeHref, type DashboardScope } from "../scope.ts";
import { channelRecords, lastShownSeq, RECORD_PREVIEW_CHARS, RECORDS_SHOWN } from "./session-records.ts";
import { SESSION_RECORDS_SCRIPT } from "../assets/session-records-script.ts";

type SessionParams = { session: string };

export function sessionHref(scope: DashboardScope, ref: string, query: Record<string, string> = {}): string {
  return scopeHref(scope, `sessions/${encodeURIComponent(ref)}`, query);
}

/** A session's id or externalId from a path, as the API accepts it (a bad one is a 400 page, never a query). */
export function parseSessionRef(value: string): string {
  const parsed = SessionRef.safeParse(value);
  if (!parsed.success) throw new ValidationError(`Session: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}

/** The session a path names in the page's environment; another environment's (or project's) is "not found". */
export async function sessionOfPath(deps: AppDeps, scope: DashboardScope, value: string): Promise<SessionRow> {
  const session = await findSession(deps.engine.db, scope.environment.id, parseSessionRef(value));
  if (!session) throw new NotFoundError("Session not found");
  return session;
}

function facts(scope: DashboardScope, session: SessionRow, now: Date): Html {
  return html`<dl class="facts">
<dt>Status</dt><dd>${statusBadge(sessionStatus(session, now))}</dd>
<dt>External id</dt><dd class="mono">${session.external_id ?? "—"}</dd>
<dt>Type</dt><dd>${session.type}</dd>
<dt>Task</dt><dd>${session.task_identifier}</dd>
<dt>Current run</dt><dd>${session.current_run_id ? html`<a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(session.current_run_id)}`)}">${session.current_run_id}</a>` : "—"}</dd>
<dt>Created</dt><dd>${timeCell(session.created_at)}</dd>
<dt>Updated</dt><dd>${timeCell(session.updated_at)}</dd>
<dt>Expires</dt><dd>${timeCell(session.expires_at)}</dd>
${session.closed_at ? html`<dt>Closed</dt><dd>${timeCell(session.closed_at)}${session.closed_reason ? html` <span class="muted">${session.closed_reason}</span>` : null}</dd>` : null}
<dt>Records</dt><dd>.in ${session.in_seq}, .out ${session.out_seq}</dd>
<dt>Tags</dt><dd>${tagList(session.tags)}</dd>
</dl>`;
}

function runsTable(scope: DashboardScope, session: SessionRow, runs: RunListItem[], more: boolean): Html {
  const all = scopeHref(scope, "runs", { session: session.id });
  return html`<table><thead><tr><th>Run</th><th>Task</th><th>Status</th><th>Created</th></tr></thead>
<tbody>${runs.length === 0 ? html`<tr><td colspan="4" class="muted">No runs.</td></tr>` : runs.map((run) => html`<tr>
<td><a class="mono" href="${scopeHref(scope, `runs/${encodeURIComponent(run.id)}`)}">${run.id}</a></td>
<td>${run.taskIdentifier}</td><td>${statusBadge(run.status)}</td><td>${timeCell(run.createdAt)}</td></tr>`)}</tbody></table>
<p><a href="${all}">${more ? "All runs of this session →" : "In the runs list →"}</a></p>`;
}

/** The part of the page htmx refreshes every 5 s (status, current run, runs); the records stream on their own. */
async function summary(deps: AppDeps, scope: DashboardScope, session: SessionRow, now: Date): Promise<Html> {
  const runs = await runListPage(deps, [scope.environment.id], { "filter[session]": [session.id] });
  return html`<div id="session-summary" class="grid2" hx-get="${sessionHref(scope, session.id)}" hx-trigger="every 5s" hx-swap="outerHTML">
<section class="card"><h2>Session</h2>${facts(scope, session, now)}
${session.metadata ? html`<h2>Metadata</h2>${jsonBlock(session.metadata)}` : null}
<h2>Trigger config</h2>${jsonBlock(session.trigger_config)}</section>
<section class="card"><h2>Runs</h2>${runsTable(scope, session, runs.data, runs.pagination.next !== undefined)}</section>
</div>`;
}

/**
 * The `.in` and `.out` records: the latest of each channel as the page is rendered, then, while the
 * session is active, every record appended after them, streamed (session-stream.ts) and added by
 * the page's script. The stream resumes after the last sequence number rendered, so no record
 * appended between the render and the stream's start is missed.
 */
async function records(deps: AppDeps, scope: DashboardScope, session: SessionRow, now: Date): Promise<Html> {
  const [ins, outs] = await Promise.all(
    (["in", "out"] as const).map((io) => readLastRecordPreviews(deps.engine.db, session.id, io, RECORDS_SHOWN, RECORD_PREVIEW_CHARS)),
  );
  const active = sessionStatus(session, now) === "ACTIVE";
  const stream = active && deps.sessionStreams
    ? scopeHref(scope, `sessions/${encodeURIComponent(session.id)}/stream`, { in: String(lastShownSeq(ins!)), out: String(lastShownSeq(outs!)) })
    : null;
  return html`<div class="records-live"${stream ? html` data-records-stream="${stream}" data-records-cap="${RECORDS_SHOWN}" data-records-max-chars="${RECORD_PREVIEW_CHARS}"` : null}>
<p data-records-status class="muted">${stream ? "Connecting to the live records…" : active ? "Live records are not served by this process: reload to see new ones." : "The session is no longer active: no new records will arrive."}</p>
<div class="grid2">${channelRecords("in", ins!, session.in_seq)}${channelRecords("out", outs!, session.out_seq)}</div>
</div>
${stream ? html`<script src="${SESSION_RECORDS_SCRIPT.path}" defer></script>` : null}`;
}

/** GET /dashboard/{ref}/{env}/sessions/{session}: by id or externalId, as over the API. */
export function registerSessionPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet<SessionParams>(dash, deps, "sessions/:session", "sessions", async ({ scope, params, request, now }) => {
    const session = await sessionOfPath(deps, scope, params.session);
    const top = await summary(deps, scope, session, now);
    // An htmx refresh asks for the summary alone: the records are not read again.
    if (request.headers["hx-request"] === "true") return { title: session.id, content: top, fragment: top };
    const content = html`<h1><span class="mono">${session.id}</span> ${statusBadge(sessionStatus(session, now))}</h1>
${top}
${await records(deps, scope, session, now)}`;
    return { title: session.id, content };
  });
}
