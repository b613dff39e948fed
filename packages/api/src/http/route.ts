import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z, type ZodType } from "zod";
import { authenticate, type AuthRequirement } from "../auth/authenticate.ts";
import type { Principal } from "../auth/principal.ts";
import type { AppDeps } from "../deps.ts";
import { JSON_MEDIA_TYPES, mediaTypeOf } from "./body-parsers.ts";
import { formatZodError, sendError } from "./errors.ts";
import { limitsOf } from "./limits.ts";

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RouteContext<P, Q, B> {
  request: FastifyRequest;
  reply: FastifyReply;
  params: P;
  query: Q;
  body: B;
  /** Set when the route declares `auth`. */
  principal: Principal;
}

/** A request body the handler reads itself (NDJSON, raw bytes, an optional JSON body): documented, not validated here. */
export interface DocumentedBody {
  mediaType: string;
  /** One NDJSON line's schema for `application/x-ndjson`, the text's for a body read as text; omit for any bytes or any JSON. */
  schema?: ZodType;
  required: boolean;
  description: string;
}

export interface RouteDefinition<P extends ZodType, Q extends ZodType, B extends ZodType> {
  method: Method;
  url: string;
  /** The SDK operation this route serves (`runs.list`); the OpenAPI operationId is `runs_list`. */
  operation: string;
  summary: string;
  tags?: string[];
  /** Omit for unauthenticated routes (health, callback URLs). */
  auth?: AuthRequirement;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * The body as the document shows it, when it says more than `body` can while `body` keeps the
   * clearer messages: alternatives (exactly one of two fields) that a single object parses with a
   * refinement in the handler. Both must admit the same requests (the OpenAPI fuzz test checks it).
   */
  bodyDocument?: ZodType;
  /** Documented in the OpenAPI document. */
  response?: ZodType;
  /** Media type of the success body when it is not JSON (a packet download). */
  responseMediaType?: string;
  /** Success status; 200 unless the handler sets another (202 for batches). */
  status?: number;
  /** Other success statuses the handler answers with, with the same body (a create that finds the resource already there: 200 where a new one is 201). */
  alsoSucceeds?: { status: number; description: string }[];
  /** What the success answer is, for the document ("OK" / "Accepted" otherwise). */
  successDescription?: string;
  /** Headers of the success answer, for the document. */
  successHeaders?: Record<string, { description: string; required: boolean; schema: Record<string, unknown> }>;
  /** Request headers the handler reads itself, documented as header parameters (the handler validates them with these schemas). */
  documentedHeaders?: { name: string; schema: ZodType; description: string }[];
  /**
   * Error statuses the handler itself produces beyond those the OpenAPI document derives from the
   * definition (auth → 401/403, no auth → 429, params → 404/414, a body → 413/415, every route → 400/405/408/503).
   */
  errors?: number[];
  /** Statuses the handler answers with a body of their own (not `{ error }`), for the document. */
  otherResponses?: Record<number, { description: string; schema: Record<string, unknown> }>;
  /** Documents a body the handler parses itself (no `body` schema). */
  documentedBody?: DocumentedBody;
  /** Bytes; defaults to the app's limit (3 MiB). */
  bodyLimit?: number;
  /**
   * Runs before a byte of the body is read (after the public rate limit): a route whose body is
   * expensive to read refuses here what it would refuse anyway.
   */
  beforeBody?(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  handler(ctx: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>>): Promise<unknown>;
}

const ROUTES = Symbol("svc routes");
type WithRoutes = FastifyInstance & { [ROUTES]?: RouteDefinition<any, any, any>[] };

/** The routes defined on this app through `defineRoute` (for the OpenAPI document). Per app, not per process. */
export function routesOf(app: FastifyInstance): readonly RouteDefinition<any, any, any>[] {
  return (app as WithRoutes)[ROUTES] ?? [];
}

function parseOr400<T extends ZodType>(reply: FastifyReply, schema: T | undefined, value: unknown, label: string): { ok: true; value: z.infer<T> } | { ok: false } {
  if (!schema) return { ok: true, value: value as z.infer<T> };
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  sendError(reply, 400, `${label}: ${formatZodError(result.error)}`);
  return { ok: false };
}

/**
 * The media type a body arrived with when it was not parsed as JSON, else null. Decided by the
 * Content-Type, not by the parsed value: a JSON string body is a string too. zod takes a Buffer
 * for an object, so without this check a JSON text sent as a form would read as `{}` and every
 * field in it would be silently dropped.
 */
export function nonJsonMediaType(request: FastifyRequest): string | null {
  if (request.body === undefined) return null;
  const mediaType = mediaTypeOf(request);
  return JSON_MEDIA_TYPES.includes(mediaType) ? null : mediaType;
}

function describeJsonValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Every route body is a JSON object; the message for any other JSON value, else null. */
export function notAnObjectError(body: unknown): string | null {
  if (typeof body === "object" && body !== null && !Array.isArray(body)) return null;
  return `Request body must be a JSON object, got ${describeJsonValue(body)}`;
}

/**
 * Declares a route: auth requirement, zod schemas for params/query/body (400 on failure, the same
 * schemas feed /api/openapi.json) and a short handler. Order of checks: for routes without
 * credentials the public rate limit per client address (429), then `beforeBody`, both before the
 * body is read; then auth (401), params, query, body (400, or 415 when it is not JSON), then the
 * handler (404/403/422 from engine errors).
 */
export function defineRoute<P extends ZodType = ZodType, Q extends ZodType = ZodType, B extends ZodType = ZodType>(
  app: FastifyInstance,
  deps: AppDeps,
  def: RouteDefinition<P, Q, B>,
): void {
  ((app as WithRoutes)[ROUTES] ??= []).push(def);
  const publicRate = def.auth ? null : limitsOf(app).publicRate;
  app.route({
    method: def.method,
    url: def.url,
    ...(def.bodyLimit ? { bodyLimit: def.bodyLimit } : {}),
    ...(publicRate || def.beforeBody
      ? {
          onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
            const wait = publicRate?.take(request.ip) ?? 0;
            if (wait > 0) {
              reply.header("retry-after", String(wait));
              return sendError(reply, 429, `Too many requests from ${request.ip}: retry in ${wait} s`);
            }
            await def.beforeBody?.(request, reply);
            if (reply.sent) return reply;
          },
        }
      : {}),
    handler: async (request, reply) => {
      const principal = def.auth ? await authenticate(deps, request, def.auth) : (undefined as unknown as Principal);
      const params = parseOr400(reply, def.params, request.params, "Invalid path parameters");
      if (!params.ok) return reply;
      const query = parseOr400(reply, def.query, request.query, "Invalid query");
      if (!query.ok) return reply;
      if (def.body && request.body === undefined && def.method !== "GET") {
        return sendError(reply, 400, "Request body is empty");
      }
      const mediaType = def.body ? nonJsonMediaType(request) : null;
      if (mediaType !== null) return sendError(reply, 415, `Content-Type must be application/json (got ${mediaType})`);
      const notAnObject = def.body ? notAnObjectError(request.body) : null;
      if (notAnObject !== null) return sendError(reply, 400, notAnObject);
      const body = parseOr400(reply, def.body, request.body, "Invalid request body");
      if (!body.ok) return reply;
      const result = await def.handler({ request, reply, params: params.value, query: query.value, body: body.value, principal });
      if (reply.sent) return reply;
      return result;
    },
  });
}
