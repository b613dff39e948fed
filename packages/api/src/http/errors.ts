import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ZodError } from "zod";
import { isDatabaseUnavailable } from "@svc/runtime/db";
import { LogThrottle, SvcError } from "@svc/runtime/engine";

/** The one table from engine error codes to HTTP statuses. */
const STATUS_BY_CODE: Record<string, number> = {
  validation: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unprocessable: 422,
  illegal_transition: 409,
};

/** Formats zod issues as one readable line: `options.tags.0: Expected string, received number`. */
export function formatZodError(error: ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") + ": " : ""}${issue.message}`)
    .join("; ");
}

/** Seconds a client is asked to wait before trying again while the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export function sendError(reply: FastifyReply, status: number, message: string, extra: Record<string, unknown> = {}) {
  // The SDK retries 409 and 5xx unless told not to; our errors are deterministic, but for a 503.
  if (status === 503) reply.header("retry-after", String(UNAVAILABLE_RETRY_AFTER_SECONDS)).header("x-should-retry", "true");
  else if (status === 409 || status >= 500) reply.header("x-should-retry", "false");
  return reply.status(status).send({ error: message, ...extra });
}

/**
 * The Fastify error handler: every error becomes `{ error }`, with a 4xx where the input was at
 * fault and a 503 while the database is unreachable (logged at most once per `throttle` interval).
 */
export function createErrorHandler(throttle: LogThrottle, options: { printUnhandled?: boolean } = {}) {
  const printUnhandled = options.printUnhandled ?? false;
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => handleError(error, request, reply, throttle, printUnhandled);
}

function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply, throttle: LogThrottle, printUnhandled: boolean) {
  if (error instanceof ZodError) return sendError(reply, 400, formatZodError(error));
  if (error instanceof SvcError) {
    const status = STATUS_BY_CODE[error.code] ?? 400;
    const extra = status === 403 ? { code: "unauthorized", param: "access_token", type: "authorization" } : {};
    return sendError(reply, status, error.message, extra);
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.code === "FST_ERR_CTP_EMPTY_JSON_BODY") return sendError(reply, 400, "Request body is empty");
  if (fastifyError.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return sendError(reply, 415, `Unsupported Content-Type: ${request.headers["content-type"] ?? "none"}`);
  if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") return sendError(reply, 413, "Request body too large");
  if (error instanceof SyntaxError || fastifyError.code === "FST_ERR_CTP_INVALID_JSON_BODY") return sendError(reply, 400, "Invalid JSON");
  // SQLSTATE class 22 (data exception): input Postgres cannot store, e.g. a NUL character in text
  // or jsonb, or a date out of range. The input is at fault, whichever route carried it.
  const sqlState = (error as { code?: unknown }).code;
  if (typeof sqlState === "string" && /^22[0-9A-Z]{3}$/.test(sqlState)) {
    return sendError(reply, 400, `Invalid input: ${error.message.replace(/\u0000/g, "\\u0000")}`);
  }
  // Postgres is down, restarting or out of connections: nothing is wrong with the request, and
  // the same request may succeed in a moment (whether a write that was cut off committed is
  // unknown: retry with an idempotency key).
  if (isDatabaseUnavailable(error)) {
    const log = throttle.pass("database unavailable");
    if (log.pass) request.log.warn({ err: { message: error.message, code: sqlState }, suppressed: log.suppressed }, "database unavailable: answering 503");
    return sendError(reply, 503, "Service unavailable: the database cannot be reached; retry shortly");
  }
  if (typeof fastifyError.statusCode === "number" && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return sendError(reply, fastifyError.statusCode, error.message);
  }
  request.log.error({ err: error }, "unhandled error");
  // Also on stderr, whole, when asked (SVC_DEBUG_ERRORS): the app's logger may be off, as in tests.
  if (printUnhandled) console.error(error);
  return sendError(reply, 500, "Internal Server Error");
}
