import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ZodError } from "zod";
import { isDatabaseUnavailable } from "@svc/runtime/db";
import { SvcError } from "@svc/runtime/engine";
import { formatZodError } from "../http/errors.ts";
import { html } from "./html.ts";
import { plainPage } from "./layout.ts";
import { sendPage } from "./page.ts";
import { loadSession, redirectToLogin } from "./session-hook.ts";

const STATUS_BY_CODE: Record<string, number> = { validation: 400, unauthenticated: 401, forbidden: 403, not_found: 404, conflict: 409, unprocessable: 422, illegal_transition: 409 };
const TITLES: Record<number, string> = { 400: "Bad request", 401: "Not signed in", 403: "Forbidden", 404: "Not found", 409: "Conflict", 413: "Too large", 415: "Unsupported", 422: "Cannot do that", 503: "Unavailable" };

function errorPage(request: FastifyRequest, reply: FastifyReply, status: number, message: string) {
  const title = TITLES[status] ?? "Error";
  return sendPage(reply, plainPage(title, html`<h1>${title}</h1><p class="problem">${message}</p><p><a href="/dashboard">Back to the dashboard</a></p>`, request.dashboardSession), status);
}

/** Dashboard errors as HTML pages, with the API's mapping from engine errors to statuses. */
export function dashboardErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ZodError) return errorPage(request, reply, 400, formatZodError(error));
  if (error instanceof SvcError) return errorPage(request, reply, STATUS_BY_CODE[error.code] ?? 400, error.message);
  const fastifyError = error as FastifyError;
  if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") return errorPage(request, reply, 413, "The form was too large.");
  if (fastifyError.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return errorPage(request, reply, 415, "Forms must be sent as application/x-www-form-urlencoded.");
  const sqlState = (error as { code?: unknown }).code;
  if (typeof sqlState === "string" && /^22[0-9A-Z]{3}$/.test(sqlState)) return errorPage(request, reply, 400, "That input cannot be stored or searched for.");
  if (isDatabaseUnavailable(error)) {
    reply.header("retry-after", "1");
    return errorPage(request, reply, 503, "The database cannot be reached; try again in a moment.");
  }
  if (typeof fastifyError.statusCode === "number" && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) return errorPage(request, reply, fastifyError.statusCode, error.message);
  request.log.error({ err: error }, "dashboard: unhandled error");
  return errorPage(request, reply, 500, "Something went wrong on the server; it has been logged.");
}

/** An unknown dashboard path: the sign-in form when signed out (never a 404 that would tell what exists), else a 404 page. */
export function dashboardNotFound(deps: Parameters<typeof loadSession>[0]) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    request.dashboardSession ??= await loadSession(deps, request);
    if (!request.dashboardSession) return redirectToLogin(request, reply);
    return errorPage(request, reply, 404, "There is no such page.");
  };
}
