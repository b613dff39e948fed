import type { FastifyInstance } from "fastify";
import fastifyCookie from "@fastify/cookie";
import { ValidationError } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { registerAssets } from "./assets.ts";
import { dashboardErrorHandler, dashboardNotFound } from "./errors.ts";
import { setSecurityHeaders } from "./security-headers.ts";
import { sessionHook } from "./session-hook.ts";
import { registerSignIn } from "./sign-in.ts";
import { registerProjectsPage } from "./pages/projects.ts";
import { registerRunPages } from "./pages/runs.ts";
import { registerRunPage } from "./pages/run.ts";
import { registerBulkActionPages } from "./pages/bulk-actions.ts";
import { registerTaskPages } from "./pages/tasks.ts";
import { registerTokenPages } from "./pages/tokens.ts";
import { registerQueuesPage } from "./pages/queues.ts";
import { registerSchedulesPage } from "./pages/schedules.ts";
import { registerEnvVarsPage } from "./pages/envvars.ts";
import { registerSessionPages } from "./pages/sessions.ts";

/** Largest form the dashboard accepts (a token's completion JSON is the largest thing typed in). */
const FORM_BODY_LIMIT = 1024 * 1024;

/**
 * The dashboard at /dashboard: server-rendered pages (escaping templates, html.ts) with htmx for
 * live refreshes, served by the API process from Postgres alone. Its own encapsulated Fastify
 * context: form bodies, cookies, HTML errors and the session check apply here and nowhere else.
 */
export async function registerDashboard(app: FastifyInstance, deps: AppDeps) {
  await app.register(
    async (dash) => {
      await dash.register(fastifyCookie);
      dash.decorateRequest("dashboardSession", null);
      dash.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
        const text = String(body);
        if (text.includes("%00") || text.includes("\u0000")) return done(new ValidationError("Form fields cannot contain NUL characters"), undefined);
        const fields: Record<string, string> = {};
        for (const [key, value] of new URLSearchParams(text)) fields[key] = value;
        done(null, fields);
      });
      dash.addHook("onRequest", async (_request, reply) => setSecurityHeaders(reply));
      dash.addHook("onSend", async (_request, reply) => {
        reply.header("server-timing", `app;dur=${reply.elapsedTime.toFixed(1)}`);
      });
      dash.addHook("preHandler", sessionHook(deps));
      dash.setErrorHandler(dashboardErrorHandler);
      dash.setNotFoundHandler(dashboardNotFound(deps));
      await registerAssets(dash);
      registerSignIn(dash, deps);
      registerProjectsPage(dash, deps);
      registerRunPages(dash, deps);
      registerRunPage(dash, deps);
      registerBulkActionPages(dash, deps);
      registerTaskPages(dash, deps);
      registerTokenPages(dash, deps);
      registerQueuesPage(dash, deps);
      registerSchedulesPage(dash, deps);
      registerEnvVarsPage(dash, deps);
      registerSessionPages(dash, deps);
    },
    { prefix: "/dashboard" },
  );
}
