import type { FastifyInstance } from "fastify";
import { createDashboardSession, DASHBOARD_SESSION_LIFETIME_MS, deleteDashboardSession } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { limitsOf } from "../http/limits.ts";
import { html, type Html } from "./html.ts";
import { plainPage } from "./layout.ts";
import { sendPage } from "./page.ts";
import { clearCookie, LOGIN_CSRF_COOKIE, newCsrfToken, safeNext, SESSION_COOKIE, setCookie, tokensMatch } from "./session-cookie.ts";
import type { DashboardRouteConfig } from "./session-hook.ts";

const PUBLIC: DashboardRouteConfig = { dashboardPublic: true };

function loginForm(csrf: string, next: string, problem?: string): Html {
  return html`<section class="login">
<h1>Sign in</h1>
<p>Paste a personal access token (<code>svc_pat_…</code>). The operator command <code>svc access you@example.com</code> prints one (it makes the user and a project membership when needed); you see the projects your user is a member of.</p>
${problem ? html`<p class="problem" role="alert">${problem}</p>` : null}
<form method="post" action="/dashboard/login">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="next" value="${next}">
<label>Personal access token <input type="password" name="token" autocomplete="off" required autofocus spellcheck="false"></label>
<button type="submit">Sign in</button>
</form>
</section>`;
}

/** GET/POST /dashboard/login and POST /dashboard/logout. */
export function registerSignIn(dash: FastifyInstance, deps: AppDeps) {
  const throttle = limitsOf(dash).login;
  dash.get("/login", { config: PUBLIC }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const next = safeNext(query.next);
    if (request.dashboardSession) return reply.redirect(next, 303);
    // One token per browser, kept while it is signed out (two tabs with the form both work).
    const existing = request.cookies[LOGIN_CSRF_COOKIE];
    const csrf = existing && /^[A-Za-z0-9_-]{32}$/.test(existing) ? existing : newCsrfToken();
    setCookie(request, reply, LOGIN_CSRF_COOKIE, csrf);
    return sendPage(reply, plainPage("Sign in", loginForm(csrf, next)));
  });

  dash.post("/login", { config: PUBLIC }, async (request, reply) => {
    const body = (request.body && typeof request.body === "object" ? request.body : {}) as Record<string, unknown>;
    const next = safeNext(body.next);
    const expected = request.cookies[LOGIN_CSRF_COOKIE];
    const csrf = expected ?? newCsrfToken();
    if (!expected) setCookie(request, reply, LOGIN_CSRF_COOKIE, csrf);
    if (!tokensMatch(body._csrf, expected)) {
      return sendPage(reply, plainPage("Sign in", loginForm(csrf, next, "The sign-in form expired or was not sent from this page. Try again.")), 403);
    }
    const token = typeof body.token === "string" ? body.token.trim() : "";
    // Checked before the token is looked up; only failed attempts are counted (login-throttle.ts).
    const wait = throttle?.wait(request.ip, token) ?? { seconds: 0, by: null };
    if (wait.seconds > 0) {
      reply.header("retry-after", String(wait.seconds));
      const who = wait.by === "address" ? "from this address" : "with this token";
      return sendPage(reply, plainPage("Sign in", loginForm(csrf, next, `Too many failed sign-ins ${who}: try again in ${wait.seconds} s.`)), 429);
    }
    if (!token.startsWith("svc_pat_") || token.length > 200) {
      throttle?.failed(request.ip, token);
      return sendPage(reply, plainPage("Sign in", loginForm(csrf, next, "That is not a personal access token: they start with svc_pat_.")), 400);
    }
    const made = await createDashboardSession(deps.engine.db, token, deps.engine.clock.now());
    if (!made) {
      throttle?.failed(request.ip, token);
      request.log.info({ ip: request.ip }, "dashboard sign-in refused: unknown or revoked token");
      return sendPage(reply, plainPage("Sign in", loginForm(csrf, next, "That personal access token is unknown or revoked.")), 401);
    }
    setCookie(request, reply, SESSION_COOKIE, made.token, Math.floor(DASHBOARD_SESSION_LIFETIME_MS / 1000));
    clearCookie(request, reply, LOGIN_CSRF_COOKIE);
    request.log.info({ userId: made.session.userId }, "dashboard sign-in");
    return reply.redirect(next, 303);
  });

  // Needs the session and its CSRF token (the session hook checks both).
  dash.post("/logout", async (request, reply) => {
    const token = request.cookies[SESSION_COOKIE];
    if (token) await deleteDashboardSession(deps.engine.db, token);
    clearCookie(request, reply, SESSION_COOKIE);
    return reply.redirect("/dashboard/login", 303);
  });
}
