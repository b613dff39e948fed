import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import {
  activeSecretKeys,
  callbackHashMatches,
  callbackUrl,
  completeToken,
  createToken,
  getEnvironment,
  getWaitpoint,
  listTokenRows,
  NotFoundError,
  parseJsonText,
  parseTokenListFilter,
  type Environment,
} from "@svc/runtime/engine";
import {
  CompleteWaitpointTokenRequestBody,
  CompleteWaitpointTokenResponse,
  CreateWaitpointTokenRequestBody,
  CreateWaitpointTokenResponse,
  ListWaitpointTokensFilterQuery,
  ListWaitpointTokensResponse,
  WaitpointId,
  WaitpointTokenDetail,
} from "@svc/runtime/contracts";
import { requireScope } from "../auth/scopes.ts";
import { signingKeyFor } from "../auth/public-tokens.ts";
import type { AppDeps } from "../deps.ts";
import { JSON_MEDIA_TYPES, mediaTypeOf } from "../http/body-parsers.ts";
import { sendError } from "../http/errors.ts";
import { attachPublicToken } from "../http/jwt-headers.ts";
import { CursorPageQuery, keysetPage } from "../http/pagination.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { presentTokenDetail, presentTokenItem } from "../presenters/waitpoint-token.ts";

/** A token's public access token may complete it for a day (Trigger.dev's lifetime). */
const TOKEN_JWT_SECONDS = 24 * 3600;
const DEFAULT_PAGE_SIZE = 25;
const IdParams = z.object({ id: WaitpointId });

/** Builds callback URLs for one environment, fetching its signing key once. */
async function urlBuilder(deps: AppDeps, env: Environment): Promise<(id: string) => string> {
  const key = await signingKeyFor(deps, env);
  return (id) => callbackUrl(deps.engine.apiUrl, id, key);
}

/**
 * The callback body is the output as sent: JSON with any content type (curl's default form
 * type included), `{}` when empty, 400 when it is not JSON. A JSON media type arrives parsed, a
 * JSON string (`"done"`) as a string too, so only other media types are parsed here.
 */
function callbackOutput(request: FastifyRequest): unknown {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (JSON_MEDIA_TYPES.includes(mediaTypeOf(request))) return body;
  if (typeof body !== "string" && !Buffer.isBuffer(body)) return body;
  const text = body.toString().trim();
  if (text.length === 0) return {};
  return parseJsonText(text, "Callback body (JSON or empty)");
}

export function registerWaitpointRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/waitpoints/tokens",
    operation: "wait.createToken",
    errors: [422],
    summary: "Create a waitpoint token",
    tags: ["waitpoints"],
    auth: { allow: ["secretKey"] },
    body: CreateWaitpointTokenRequestBody,
    response: CreateWaitpointTokenResponse,
    async handler({ body, principal, reply }) {
      const env = environmentOf(principal);
      const { waitpoint, isCached } = await createToken(deps.engine, env.id, body);
      // After the commit: signing needs its own connection, which a busy pool may not have.
      const url = (await urlBuilder(deps, env))(waitpoint.id);
      const publicAccessToken = await attachPublicToken(deps, reply, env, [`write:waitpoints:${waitpoint.id}`], TOKEN_JWT_SECONDS);
      return { id: waitpoint.id, isCached, url, publicAccessToken };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/waitpoints/tokens",
    operation: "wait.listTokens",
    summary: "List waitpoint tokens, newest first",
    tags: ["waitpoints"],
    auth: { allow: ["secretKey"] },
    query: CursorPageQuery.extend(ListWaitpointTokensFilterQuery.shape),
    response: ListWaitpointTokensResponse,
    async handler({ query, principal }) {
      const env = environmentOf(principal);
      const filter = parseTokenListFilter(query, deps.engine.clock.now());
      const urlOf = await urlBuilder(deps, env);
      return keysetPage(
        query,
        DEFAULT_PAGE_SIZE,
        (keyset, direction, limit) => listTokenRows(deps.engine.db, env.id, filter, keyset, direction, limit),
        (row) => presentTokenItem(row, urlOf(row.id)),
      );
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/waitpoints/tokens/:id",
    operation: "wait.retrieveToken",
    summary: "Retrieve a waitpoint token with its output",
    tags: ["waitpoints"],
    auth: { allow: ["secretKey"] },
    params: IdParams,
    response: WaitpointTokenDetail,
    async handler({ params, principal }) {
      const env = environmentOf(principal);
      const row = await getWaitpoint(deps.engine.db, params.id, env.id);
      if (!row || row.type !== "MANUAL") throw new NotFoundError("Waitpoint not found");
      return presentTokenDetail(row, (await urlBuilder(deps, env))(row.id));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/waitpoints/tokens/:id/complete",
    operation: "wait.completeToken",
    summary: "Complete a waitpoint token (first completion wins)",
    tags: ["waitpoints"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: IdParams,
    body: CompleteWaitpointTokenRequestBody,
    response: CompleteWaitpointTokenResponse,
    async handler({ params, body, principal }) {
      requireScope(principal, [`write:waitpoints:${params.id}`, "write:waitpoints"]);
      const env = environmentOf(principal);
      const output = "output" in body && body.output !== undefined ? body.output : body.data;
      // One statement on the pool: its own transaction, one round trip.
      await completeToken(deps.engine, deps.engine.db, params.id, output, { environmentId: env.id });
      return { success: true as const };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/waitpoints/tokens/:id/callback/:hash",
    operation: "wait.completeTokenByCallback",
    errors: [401],
    documentedBody: { mediaType: "application/json", required: false, description: "Any JSON (with any Content-Type), the token's output; an empty body is `{}`" },
    summary: "Complete a waitpoint token through its callback URL (no auth header; the URL is the credential)",
    tags: ["waitpoints"],
    params: z.object({ id: z.string().max(128), hash: z.string().max(128) }),
    response: CompleteWaitpointTokenResponse,
    async handler({ params, request, reply }) {
      const row = await getWaitpoint(deps.engine.db, params.id);
      if (!row || row.type !== "MANUAL") throw new NotFoundError("Waitpoint not found");
      const env = await getEnvironment(deps.engine.db, row.environment_id);
      if (!env) throw new NotFoundError("Waitpoint not found");
      const keys = await activeSecretKeys(deps.engine.db, deps.engine.secrets, env.parentEnvironmentId ?? env.id, deps.engine.clock.now());
      if (!callbackHashMatches(keys, row.id, params.hash)) return sendError(reply, 401, "Invalid URL, hash doesn't match");
      const output = callbackOutput(request);
      await completeToken(deps.engine, deps.engine.db, row.id, output, { environmentId: env.id });
      return { success: true as const };
    },
  });
}
