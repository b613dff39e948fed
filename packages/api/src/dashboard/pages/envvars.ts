import type { FastifyInstance } from "fastify";
import { listEnvironmentVariables } from "@svc/runtime/engine";
import type { EnvironmentVariableItem as EnvironmentVariable } from "@svc/runtime/contracts";
import type { AppDeps } from "../../deps.ts";
import { html, type Html } from "../html.ts";
import { scopedGet } from "../page.ts";
import type { DashboardScope } from "../scope.ts";

/** Values longer than this (or on several lines) show their start, and the rest on demand. */
const SHORT_VALUE = 80;

/** Where a branch's variable comes from (null off a branch, where every variable is the environment's own). */
type Source = "branch" | "inherited" | "overrides" | null;

function valueCell(variable: EnvironmentVariable): Html {
  // A secret's value never reaches the page: the engine has already replaced it, and it is not rendered either.
  if (variable.isSecret) return html`<span class="badge">secret</span> <span class="muted">redacted</span>`;
  const value = variable.value;
  if (value === "") return html`<span class="muted">(empty)</span>`;
  if (value.length <= SHORT_VALUE && !value.includes("\n")) return html`<code>${value}</code>`;
  const start = value.split("\n", 1)[0]!.slice(0, SHORT_VALUE);
  return html`<details><summary><code>${start}</code>…</summary><pre class="json">${value}</pre></details>`;
}

function sourceCell(source: Source): Html | null {
  if (source === null) return null;
  const text = { branch: "this branch", inherited: "preview (inherited)", overrides: "this branch (overrides preview)" }[source];
  return html`<td>${source === "inherited" ? html`<span class="muted">${text}</span>` : text}</td>`;
}

/**
 * The variables as GET /api/v1/projects/{ref}/envvars/{env} lists them (for a branch, the preview
 * environment's values under the branch's own), and for a branch where each one comes from: the
 * branch's and the parent's own lists are read only for their names.
 */
async function variablesWithSource(deps: AppDeps, scope: DashboardScope): Promise<{ variable: EnvironmentVariable; source: Source }[]> {
  const { db, secrets } = deps.engine;
  const env = scope.environment;
  const visible = await listEnvironmentVariables(db, secrets, env);
  if (!env.parentEnvironmentId) return visible.map((variable) => ({ variable, source: null }));
  const namesOf = async (id: string) => new Set((await listEnvironmentVariables(db, secrets, { id, parentEnvironmentId: null })).map((v) => v.name));
  const [own, parent] = await Promise.all([namesOf(env.id), namesOf(env.parentEnvironmentId)]);
  return visible.map((variable) => ({
    variable,
    source: !own.has(variable.name) ? "inherited" : parent.has(variable.name) ? "overrides" : "branch",
  }));
}

function explanation(scope: DashboardScope): Html {
  if (scope.branch) {
    return html`<p class="muted">Branch <strong>${scope.branch}</strong> sees the preview environment's variables, with its own values over those of the same name. Runs of the branch get exactly this list.</p>`;
  }
  if (scope.slug === "preview") return html`<p class="muted">Every preview branch inherits these variables; a branch's own value of the same name wins there. Pick a branch above to see what it gets.</p>`;
  return html`<p class="muted">Runs of this environment get these variables in <code>process.env</code>.</p>`;
}

/** GET /dashboard/{ref}/{env}/envvars: read-only (values are changed over the API, /api/v1/projects/{ref}/envvars/{env}). */
export function registerEnvVarsPage(dash: FastifyInstance, deps: AppDeps) {
  scopedGet(dash, deps, "envvars", "envvars", async ({ scope }) => {
    const rows = await variablesWithSource(deps, scope);
    const onBranch = scope.environment.parentEnvironmentId !== null;
    const secrets = rows.filter((r) => r.variable.isSecret).length;
    const content = html`<h1>Environment variables</h1>
${explanation(scope)}
<table><thead><tr><th>Name</th><th>Value</th>${onBranch ? html`<th>Set on</th>` : null}</tr></thead>
<tbody>${
      rows.length === 0
        ? html`<tr><td colspan="${onBranch ? 3 : 2}" class="muted">No variables${onBranch ? " on this branch or the preview environment" : " in this environment"}.</td></tr>`
        : rows.map(({ variable, source }) => html`<tr><td class="mono">${variable.name}</td><td>${valueCell(variable)}</td>${sourceCell(source)}</tr>`)
    }</tbody></table>
<p class="muted">${rows.length} variable${rows.length === 1 ? "" : "s"}${secrets > 0 ? html`, ${secrets} secret (values are never shown)` : null}.</p>`;
    return { title: "Environment variables", content };
  });
}
