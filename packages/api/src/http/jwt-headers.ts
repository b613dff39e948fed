import type { FastifyReply } from "fastify";
import type { Environment } from "@svc/runtime/engine";
import { mintPublicToken } from "../auth/public-tokens.ts";
import type { AppDeps } from "../deps.ts";

/**
 * Attaches Trigger.dev's token headers to a trigger/batch/waitpoint response: `x-trigger-jwt`
 * (a ready public token the SDK uses as publicAccessToken) and `x-trigger-jwt-claims`.
 */
export async function attachPublicToken(
  deps: AppDeps,
  reply: FastifyReply,
  env: Environment,
  scopes: string[],
  expiresInSeconds = 3600,
): Promise<string> {
  const jwt = await mintPublicToken(deps, env, scopes, expiresInSeconds);
  reply.header("x-trigger-jwt", jwt);
  reply.header("x-trigger-jwt-claims", JSON.stringify({ sub: env.id, pub: true }));
  return jwt;
}
