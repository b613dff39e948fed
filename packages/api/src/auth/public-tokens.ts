import { SignJWT } from "jose";
import { activeSecretKeys, type Environment } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";

/** The issuer and audience the published SDK signs public tokens with; we use and accept the same. */
export const JWT_ISSUER = "https://id.trigger.dev";
export const JWT_AUDIENCE = "https://api.trigger.dev";

/** The key that signs an environment's JWTs: its own secret key, or its parent's for a preview branch. */
export async function signingKeyFor(deps: AppDeps, env: Environment): Promise<string> {
  const keyEnvironmentId = env.parentEnvironmentId ?? env.id;
  const [key] = await activeSecretKeys(deps.engine.db, deps.engine.secrets, keyEnvironmentId, deps.engine.clock.now());
  if (!key) throw new Error(`environment ${keyEnvironmentId} has no secret key`);
  return key;
}

/**
 * Mints a public access token: HS256 with the environment's secret key, `sub` = environment id,
 * `pub: true`, `scopes`. `expiresInSeconds` defaults to one hour.
 */
export async function mintPublicToken(deps: AppDeps, env: Environment, scopes: string[], expiresInSeconds = 3600): Promise<string> {
  const key = await signingKeyFor(deps, env);
  const now = Math.floor(deps.engine.clock.now().getTime() / 1000);
  return new SignJWT({ pub: true, scopes })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(env.id)
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresInSeconds)
    .sign(new TextEncoder().encode(key));
}
