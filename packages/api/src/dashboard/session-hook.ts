import type { FastifyReply, FastifyRequest } from "fastify";
import { findDashboardSession } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { SESSION_COOKIE, tokensMatch } from "./session-cookie.ts";
import { plainPage } from "./layout.ts";
import { html } from "./html.ts";
import { sendPage } from "./page.ts";

/** Route config of the pages a signed-out browser may see (the sign-in form, assets). */
export interface DashboardRouteConfig {
  dashboardPublic?: boolean;
}

/** The session the request's cookie names, or null; read once per request. */
export async function loadSession(deps: AppDeps, request: FastifyRequest) {
  const token = request.cookies[SESSION_COOKIE];
  if (!token || token.length > 200) return null;
  return findDashboardSession(deps.engine.db, token, deps.engine.clock.now());
}

/** Sends a signed-out browser to the sign-in form, remembering the page it asked for. */
export function redirectToLogin(request: FastifyRequest, reply: FastifyReply) {
  const next = request.method === "GET" && request.url !== "/dashboard" ? `?next=${encodeURIComponent(request.url)}` : "";
  const target = `/dashboard/login${next}`;
  // An htmx refresh (a live list polling) would swap the sign-in page into the table: tell htmx to navigate instead.
  if (request.headers["hx-request"] === "true") return reply.status(204).header("hx-redirect", target).send();
  return reply.redirect(target, 303);
}

/**
 * Every dashboard page and action but the public ones needs a session: signed out, the browser is
 * sent to the sign-in form (a page never answers 404 or 401 to a signed-out browser, so it cannot
 * tell which runs or projects exist). Every POST must also carry the session's CSRF token
 * (`_csrf` form field or `X-CSRF-Token` header), or it is refused with 403 before it does anything.
 */
export function sessionHook(deps: AppDeps) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    request.dashboardSession = await loadSession(deps, request);
    const config = request.routeOptions.config as DashboardRouteConfig | undefined;
    if (config?.dashboardPublic) return;
    const session = request.dashboardSession;
    if (!session) return redirectToLogin(request, reply);
    if (request.method !== "GET" && request.method !== "HEAD") {
      const body = request.body as Record<string, unknown> | undefined;
      const submitted = (body && typeof body === "object" ? body._csrf : undefined) ?? request.headers["x-csrf-token"];
      if (!tokensMatch(submitted, session.csrfToken)) {
        return sendPage(
          reply,
          plainPage("Refused", html`<h1>Refused</h1><p>This form did not carry a valid CSRF token, so nothing was done. Go back, reload the page and try again.</p>`, session),
          403,
        );
      }
    }
  };
}
