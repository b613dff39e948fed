import { environmentSigningKey, JWT_AUDIENCE, JWT_ISSUER, mintEnvironmentToken, type Environment } from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";

/** The issuer and audience the published SDK signs public tokens with; we use and accept the same. */
export { JWT_AUDIENCE, JWT_ISSUER };

/** The key that signs an environment's JWTs: its own secret key, or its parent's for a preview branch. */
export function signingKeyFor(deps: AppDeps, env: Environment): Promise<string> {
  return environmentSigningKey(deps.engine, env);
}

/**
 * Mints a public access token: HS256 with the environment's secret key, `sub` = environment id,
 * `pub: true`, `scopes`. `expiresInSeconds` defaults to one hour. The worker mints the same
 * tokens through the engine (`mintEnvironmentToken`).
 */
export function mintPublicToken(deps: AppDeps, env: Environment, scopes: string[], expiresInSeconds = 3600, realtime?: { skipColumns?: string[] }): Promise<string> {
  return mintEnvironmentToken(deps.engine, env, scopes, expiresInSeconds, realtime);
}
