import type { FastifyInstance } from "fastify";
import { listProjectsForUser } from "@svc/runtime/engine";
import type { AppDeps } from "../../deps.ts";
import { html } from "../html.ts";
import { plainPage } from "../layout.ts";
import { sendPage } from "../page.ts";
import { ENVIRONMENT_SLUGS } from "../scope.ts";

/** GET /dashboard: the projects the user reaches; with exactly one, straight to its dev runs. */
export function registerProjectsPage(dash: FastifyInstance, deps: AppDeps) {
  dash.get("/", async (request, reply) => {
    const session = request.dashboardSession!;
    const projects = await listProjectsForUser(deps.engine.db, session.userId);
    if (projects.length === 1) return reply.redirect(`/dashboard/${encodeURIComponent(projects[0]!.ref)}/dev/runs`, 303);
    const content =
      projects.length === 0
        ? html`<h1>No projects</h1><p>Your user (${session.userEmail}) is not a member of any project yet. An operator adds you with <code>svc members add --project &lt;ref&gt; --user ${session.userEmail}</code>.</p>`
        : html`<h1>Projects</h1><table><thead><tr><th>Project</th><th>Organisation</th><th>Environments</th></tr></thead><tbody>
${projects.map((p) => html`<tr><td><a href="/dashboard/${encodeURIComponent(p.ref)}/dev/runs">${p.name}</a> <span class="muted mono">${p.ref}</span></td><td>${p.organizationSlug}</td>
<td>${ENVIRONMENT_SLUGS.map((slug) => html`<a href="/dashboard/${encodeURIComponent(p.ref)}/${slug}/runs">${slug}</a> `)}</td></tr>`)}
</tbody></table>`;
    return sendPage(reply, plainPage("Projects", content, session));
  });
}
