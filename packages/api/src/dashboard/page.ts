import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { DashboardSession } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import type { Html } from "./html.ts";
import { scopedPage, type Section } from "./layout.ts";
import { resolveScope, type DashboardScope } from "./scope.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The dashboard sign-in of this request, set by the dashboard's session hook (null: signed out). */
    dashboardSession: DashboardSession | null;
  }
}

/** What a page handler gets: the request, the signed-in session, the scope from the path, the engine's time. */
export interface PageContext<P = Record<string, string>, Q = Record<string, unknown>> {
  request: FastifyRequest;
  reply: FastifyReply;
  session: DashboardSession;
  scope: DashboardScope;
  params: P;
  query: Q;
  body: Record<string, string>;
  now: Date;
}

/** A whole page; `fragment` is what an htmx refresh of the page (HX-Request) receives instead. */
export interface PageResult {
  title: string;
  content: Html;
  fragment?: Html;
  status?: number;
}

/** A form's outcome: go to `redirect` (303, post/redirect/get), or show a page (a form with its errors). */
export type ActionResult = { redirect: string } | PageResult;

type ScopeParams = { projectRef: string; env: string };

function sessionOf(request: FastifyRequest): DashboardSession {
  // The session hook has already redirected a signed-out request; this is its guarantee.
  const session = request.dashboardSession;
  if (!session) throw new Error("dashboard page reached without a session");
  return session;
}

async function contextOf<P, Q>(deps: AppDeps, request: FastifyRequest, reply: FastifyReply): Promise<PageContext<P & ScopeParams, Q>> {
  const session = sessionOf(request);
  const params = request.params as P & ScopeParams;
  const query = (request.query ?? {}) as Q & { branch?: unknown };
  const branch = typeof query.branch === "string" ? query.branch : undefined;
  const scope = await resolveScope(deps.engine.db, session, params.projectRef, params.env, branch);
  const body = (request.body && typeof request.body === "object" ? request.body : {}) as Record<string, string>;
  return { request, reply, session, scope, params, query, body, now: deps.engine.clock.now() };
}

export function sendPage(reply: FastifyReply, markup: Html, status = 200) {
  return reply.status(status).header("cache-control", "no-store").type("text/html; charset=utf-8").send(markup.text);
}

function isHtmx(request: FastifyRequest): boolean {
  return request.headers["hx-request"] === "true";
}

/** A GET page under `/dashboard/:projectRef/:env/{path}` (or a redirect: a search that names one run). */
export function scopedGet<P = object, Q = Record<string, unknown>>(dash: FastifyInstance, deps: AppDeps, path: string, section: Section, handler: (ctx: PageContext<P & ScopeParams, Q>) => Promise<ActionResult>) {
  dash.get(`/:projectRef/:env/${path}`, async (request, reply) => {
    const ctx = await contextOf<P, Q>(deps, request, reply);
    const result = await handler(ctx);
    if ("redirect" in result) return reply.redirect(result.redirect, 303);
    reply.header("vary", "HX-Request");
    if (result.fragment && isHtmx(request)) return sendPage(reply, result.fragment, result.status);
    return sendPage(reply, scopedPage(result.title, section, ctx.scope, ctx.session, result.content), result.status);
  });
}

/** A form action (POST) under `/dashboard/:projectRef/:env/{path}`; the CSRF token was checked by the session hook. */
export function scopedPost<P = object>(dash: FastifyInstance, deps: AppDeps, path: string, section: Section, handler: (ctx: PageContext<P & ScopeParams>) => Promise<ActionResult>) {
  dash.post(`/:projectRef/:env/${path}`, async (request, reply) => {
    const ctx = await contextOf<P, Record<string, unknown>>(deps, request, reply);
    const result = await handler(ctx);
    if ("redirect" in result) return reply.redirect(result.redirect, 303);
    return sendPage(reply, scopedPage(result.title, section, ctx.scope, ctx.session, result.content), result.status);
  });
}
