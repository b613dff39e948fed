import type { FastifyInstance } from "fastify";
import { replayRun, retrieveRun, ValidationError } from "@svc/runtime/engine";
import type { RetrieveRunResponse } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { presentRetrievedRun } from "../../presenters/retrieved-run.ts";
import { jsonBlock } from "../format.ts";
import { html, type Html } from "../html.ts";
import { csrfField } from "../layout.ts";
import { scopedGet, scopedPost, type PageResult } from "../page.ts";
import { payloadTextarea, prefillText, readPayloadField } from "../payload-form.ts";
import { runHref, type DashboardScope } from "../scope.ts";

type RunParams = { runId: string };

/** The run's payload as the form shows it; null when it cannot be edited here (offloaded or too long): replay then keeps it. */
function editableText(run: RetrieveRunResponse): string | null {
  if (run.payloadPresignedUrl) return null;
  return prefillText(run.payload ?? null);
}

function replayForm(scope: DashboardScope, run: RetrieveRunResponse, csrf: Html, text: string | null, problem?: string): Html {
  const action = `${runHref(scope, run.id)}/replay`;
  return html`<h1>Replay <span class="mono">${run.id}</span></h1>
<section class="card"><p>A new run of <strong>${run.taskIdentifier}</strong> with the same queue, tags, metadata and limits as this one, and this payload. You confirm on the next page.</p>
<form method="post" action="${action}">${csrf}
${text === null ? html`<p class="muted">This run's payload is too large to edit here: the replay keeps it as it is.</p>` : payloadTextarea("replay-payload", text, problem)}
<div class="actions"><button type="submit">Review…</button> <a href="${runHref(scope, run.id)}">Cancel</a></div>
</form></section>`;
}

/**
 * Replay with a confirmation: GET …/replay shows the payload to edit (the run's, as JSON), a POST
 * without `confirm` shows what will be sent, and one with `confirm=yes` replays. An unchanged
 * payload is replayed as stored (its type too, e.g. superjson with its Dates); an edited one is
 * sent as JSON. A POST without a payload field (offloaded payload, or a client that only confirms)
 * keeps the run's payload.
 */
export function registerReplayPages(dash: FastifyInstance, deps: AppDeps) {
  const load = async (scope: DashboardScope, runId: string) => presentRetrievedRun(await retrieveRun(deps.engine, scope.environment.id, runId));

  scopedGet<RunParams>(dash, deps, "runs/:runId/replay", "runs", async ({ scope, params, session }) => {
    const run = await load(scope, params.runId);
    return { title: `Replay ${run.id}`, content: replayForm(scope, run, csrfField(session), editableText(run)) };
  });

  scopedPost<RunParams>(dash, deps, "runs/:runId/replay", "runs", async ({ scope, params, body, session }): Promise<PageResult | { redirect: string }> => {
    const run = await load(scope, params.runId);
    const original = editableText(run);
    const typed = original !== null && typeof body.payload === "string" ? body.payload : undefined;
    let edited: string | null = null;
    if (typed !== undefined) {
      const field = readPayloadField(typed);
      if (!field.ok) return { title: `Replay ${run.id}`, content: replayForm(scope, run, csrfField(session), typed, field.problem), status: field.status };
      // Same value (whitespace aside) as the run's: not an edit, so the stored payload is kept as it is.
      if (JSON.stringify(JSON.parse(field.text)) !== JSON.stringify(run.payload ?? null)) edited = field.text;
    }
    if (body.edit === "yes") return { title: `Replay ${run.id}`, content: replayForm(scope, run, csrfField(session), edited ?? original) };
    if (body.confirm !== "yes") {
      const action = `${runHref(scope, run.id)}/replay`;
      const carried = edited === null ? null : html`<input type="hidden" name="payload" value="${edited}">`;
      const content = html`<h1>Replay <span class="mono">${run.id}</span>?</h1>
<section class="card"><p>This triggers a new run of <strong>${run.taskIdentifier}</strong> ${edited === null ? "with the same payload" : html`with an <strong>edited</strong> payload`}:</p>
${edited === null ? (run.payloadPresignedUrl ? html`<p class="muted">(the run's offloaded payload)</p>` : jsonBlock(run.payload)) : jsonBlock(JSON.parse(edited))}
<div class="actions">
<form method="post" action="${action}">${csrfField(session)}${carried}<input type="hidden" name="confirm" value="yes"><button type="submit">Replay run</button></form>
${original !== null ? html`<form method="post" action="${action}">${csrfField(session)}${carried}<input type="hidden" name="edit" value="yes"><button class="secondary" type="submit">Edit payload</button></form>` : null}
<a class="button secondary" href="${runHref(scope, run.id)}">Cancel</a>
</div></section>`;
      return { title: "Confirm replay", content };
    }
    let result;
    try {
      result = await replayRun(deps.engine, scope.environment, run.id, edited === null ? {} : { payload: edited, payloadType: "application/json" });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return { title: `Replay ${run.id}`, content: replayForm(scope, run, csrfField(session), edited ?? original, error.message), status: 400 };
    }
    if (!result.isCached) deps.metrics?.runsTriggered.inc();
    return { redirect: runHref(scope, result.id, { notice: "replayed" }) };
  });
}
