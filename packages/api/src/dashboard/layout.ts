import type { DashboardSession } from "@svc/runtime/engine";
import { LOCAL_TIMES_SCRIPT } from "./assets/local-times-script.ts";
import { html, type Html } from "./html.ts";
import { ENVIRONMENT_SLUGS, scopeHref, type DashboardScope } from "./scope.ts";

export const ASSETS = { css: "/dashboard/assets/dashboard.css", htmx: "/dashboard/assets/htmx.min.js", localTimes: LOCAL_TIMES_SCRIPT.path } as const;

/** The views of an environment, in the order the navigation shows them. */
export const SECTIONS = [
  { path: "runs", label: "Runs" },
  { path: "tasks", label: "Tasks" },
  { path: "tokens", label: "Waitpoint tokens" },
  { path: "queues", label: "Queues & workers" },
  { path: "schedules", label: "Schedules" },
  { path: "envvars", label: "Environment variables" },
  { path: "sessions", label: "Sessions" },
] as const;
export type Section = (typeof SECTIONS)[number]["path"];

// htmx without its inline indicator <style> (the CSP has no 'unsafe-inline'), without eval
// (hx-on and trigger filters are not used) and without running <script> tags in swapped content.
const HTMX_CONFIG = JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, historyCacheSize: 0 });

function document(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · svc</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS.css}">
<script src="${ASSETS.htmx}" defer></script>
<script src="${ASSETS.localTimes}" defer></script>
</head>
<body>
${body}
</body>
</html>`;
}

/** A page outside any project (sign-in, the project list, errors when signed out). */
export function plainPage(title: string, content: Html, session?: DashboardSession | null): Html {
  return document(
    title,
    html`<header class="top"><a class="brand" href="/dashboard">svc</a><span class="spacer"></span>${session ? signOut(session) : null}</header>
<main class="plain">${content}</main>`,
  );
}

/** A page of one project environment, with the project, environment and branch pickers and the navigation. */
export function scopedPage(title: string, section: Section, scope: DashboardScope, session: DashboardSession, content: Html): Html {
  return document(
    title,
    html`<header class="top">
<a class="brand" href="/dashboard">svc</a>
<details class="picker"><summary>${scope.project.name} <span class="muted">${scope.project.ref}</span></summary>
<ul>${scope.projects.map((p) => html`<li><a href="/dashboard/${encodeURIComponent(p.ref)}/${scope.slug === "preview" ? "dev" : scope.slug}/runs">${p.name} <span class="muted">${p.organizationSlug} / ${p.ref}</span></a></li>`)}</ul>
</details>
<nav class="envs" aria-label="Environment">${ENVIRONMENT_SLUGS.map((slug) => html`<a href="${scopeHref({ project: scope.project, slug, branch: null }, section)}"${slug === scope.slug ? html` aria-current="page"` : null}>${slug}</a>`)}</nav>
${scope.slug === "preview" ? branchPicker(scope, section) : null}
<span class="spacer"></span>
${signOut(session)}
</header>
<nav class="sections" aria-label="Views">${SECTIONS.map((s) => html`<a href="${scopeHref(scope, s.path)}"${s.path === section ? html` aria-current="page"` : null}>${s.label}</a>`)}</nav>
<main>${content}</main>`,
  );
}

function branchPicker(scope: DashboardScope, section: Section): Html {
  return html`<form class="branch" method="get" action="${scopeHref({ ...scope, branch: null }, section)}">
<label>branch <select name="branch"><option value="">(preview environment)</option>${scope.branches.map((name) => html`<option${name === scope.branch ? html` selected` : null}>${name}</option>`)}</select></label>
<button type="submit">Show</button>
</form>`;
}

function signOut(session: DashboardSession): Html {
  return html`<form class="signout" method="post" action="/dashboard/logout">
<span class="muted">${session.userEmail}</span>
<input type="hidden" name="_csrf" value="${session.csrfToken}">
<button type="submit">Sign out</button>
</form>`;
}

/** The hidden CSRF field every state-changing form carries. */
export function csrfField(session: DashboardSession): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}
