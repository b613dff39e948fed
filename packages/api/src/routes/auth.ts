import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DurationText } from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { mintPublicToken } from "../auth/public-tokens.ts";
import { checkRequestedScopes, publicTokenLifetime } from "../auth/public-token-request.ts";
import { SCOPE_ACTIONS, SCOPE_TYPES } from "../auth/scopes.ts";

/**
 * A scope svc can grant: `action`, `action:type` or `action:type:id`, with an action and a resource
 * type it knows (checkRequestedScopes says which part is wrong; the pattern tells the document).
 */
const GrantableScope = z
  .string()
  .min(1)
  .max(512)
  .regex(new RegExp(`^(${SCOPE_ACTIONS.join("|")})(:(${SCOPE_TYPES.join("|")})(:.*)?)?$`));

/** Body of POST /api/v1/auth/public-tokens (what @trigger.dev/core's apiClient.createPublicToken sends). */
const CreatePublicTokenBody = z
  .object({
    scopes: z.array(GrantableScope).min(1).max(100),
    expirationTime: z
      .union([DurationText, z.number().int().positive()])
      .meta({ description: "A duration from now (\"15m\", \"1h\") or a Unix time in seconds; 15 minutes when absent" })
      .optional(),
    realtime: z.object({ skipColumns: z.array(z.string().max(64)).max(32).optional() }).optional(),
  })
  .passthrough();

export function registerAuthRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/auth/jwt/claims",
    operation: "auth.createPublicToken",
    summary: "Claims for a self-signed public access token (the SDK signs them with the secret key)",
    tags: ["auth"],
    // Only the holder of the secret key can sign, so only a secret key may ask.
    auth: { allow: ["secretKey"] },
    response: z.object({ sub: z.string(), pub: z.literal(true) }),
    async handler({ principal }) {
      // For a preview branch `sub` is the branch; the token is still signed with the preview key.
      return { sub: environmentOf(principal).id, pub: true as const };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/auth/public-tokens",
    operation: "auth.mintPublicToken",
    summary: "Mint a public access token with the given scopes (what the SDK asks for when it cannot sign one itself)",
    tags: ["auth"],
    // The same token the secret key could sign itself (auth.createPublicToken): only it may ask.
    auth: { allow: ["secretKey"] },
    body: CreatePublicTokenBody,
    response: z.object({ token: z.string() }),
    async handler({ principal, body }) {
      checkRequestedScopes(body.scopes);
      const lifetime = publicTokenLifetime(body.expirationTime, deps.engine.clock.now());
      return { token: await mintPublicToken(deps, environmentOf(principal), body.scopes, lifetime, body.realtime?.skipColumns ? { skipColumns: body.realtime.skipColumns } : undefined) };
    },
  });
}
