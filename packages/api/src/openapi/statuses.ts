import type { RouteDefinition } from "../http/route.ts";

/** Every error response of the API has this body: `{ error }`, sometimes with more fields. */
export const ERROR_SCHEMA = {
  type: "object",
  properties: { error: { type: "string" } },
  required: ["error"],
} as const;

interface ErrorStatus {
  name: string;
  description: string;
  /** Answered by Node's HTTP server itself, without the `{ error }` body. */
  noBody?: true;
  headers?: Record<string, { description: string; required: boolean; schema: Record<string, unknown> }>;
}

const RETRY_AFTER = { description: "Seconds to wait before retrying", required: true, schema: { type: "integer", minimum: 0 } };

/** The error statuses the API answers with, as `components.responses` entries. */
export const ERROR_STATUSES: Record<number, ErrorStatus> = {
  400: { name: "BadRequest", description: "Malformed URL, JSON, parameters or body" },
  401: { name: "Unauthenticated", description: "Missing, unknown, expired or forged credential, or one of a kind this operation does not accept" },
  403: { name: "Forbidden", description: "A valid credential without the scope or project membership this request needs" },
  404: { name: "NotFound", description: "No such resource in the caller's environment" },
  405: { name: "MethodNotAllowed", description: "The path exists but not with this method", headers: { Allow: { description: "The methods the path accepts", required: true, schema: { type: "string" } } } },
  408: { name: "RequestTimeout", description: "The request did not arrive whole within the server's request timeout (5 minutes by default); the connection is closed", noBody: true },
  409: { name: "Conflict", description: "The resource's state does not allow this change" },
  411: { name: "LengthRequired", description: "The request has no Content-Length" },
  413: { name: "PayloadTooLarge", description: "The request body is larger than this operation accepts" },
  414: { name: "UriTooLong", description: "A path segment is longer than 2048 characters" },
  415: { name: "UnsupportedMediaType", description: "The request body's Content-Type is not one this operation accepts" },
  422: { name: "Unprocessable", description: "Well-formed, but not possible (an invalid cron expression, a used one-time token, too many tags…)" },
  429: { name: "TooManyRequests", description: "Too many requests from this client; retry later", headers: { "Retry-After": RETRY_AFTER } },
  503: { name: "Unavailable", description: "The database is unreachable; retry later", headers: { "Retry-After": RETRY_AFTER } },
};

/** Statuses any request can meet: a malformed URL, a wrong method, a request too slow to arrive, a database outage. */
const EVERY_ROUTE = [400, 405, 408, 503];
const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * The error statuses a route can answer with, derived from its definition where possible:
 * auth → 401 (and 403 where a scope or a membership is checked: public JWTs, PATs), no auth →
 * 429 (the public rate limit per client address, when configured); path
 * parameters → 404 (the lookup) and 414; a body-carrying method → 413 and 415 (a Content-Type the
 * parsers refuse, or not JSON where a `body` schema is declared);
 * plus what the route declares its handler produces (`errors`).
 */
export function errorStatusesOf(route: RouteDefinition<any, any, any>): number[] {
  const statuses = new Set(EVERY_ROUTE);
  if (route.auth) {
    statuses.add(401);
    if (route.auth.allow.some((kind) => kind !== "secretKey")) statuses.add(403);
  } else {
    statuses.add(429);
  }
  if (route.params) statuses.add(404).add(414);
  if (BODY_METHODS.has(route.method)) statuses.add(413).add(415);
  for (const status of route.errors ?? []) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}
