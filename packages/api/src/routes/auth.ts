import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

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
}
