import { SignJWT } from "jose";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "./environments.ts";
import { activeSecretKeys } from "./secret-keys.ts";

/** The issuer and audience the published SDK signs public tokens with; svc uses and accepts the same. */
export const JWT_ISSUER = "https://id.trigger.dev";
export const JWT_AUDIENCE = "https://api.trigger.dev";

/** The key that signs an environment's JWTs and callback URLs: its own secret key, or its parent's for a preview branch. */
export async function environmentSigningKey(deps: Pick<EngineDeps, "db" | "secrets" | "clock">, env: Pick<Environment, "id" | "parentEnvironmentId">): Promise<string> {
  const keyEnvironmentId = env.parentEnvironmentId ?? env.id;
  const [key] = await activeSecretKeys(deps.db, deps.secrets, keyEnvironmentId, deps.clock.now());
  if (!key) throw new Error(`environment ${keyEnvironmentId} has no secret key`);
  return key;
}

/** A public access token: HS256 with the environment's secret key, `sub` = environment id, `pub: true`, `scopes`. */
export async function mintEnvironmentToken(
  deps: Pick<EngineDeps, "db" | "secrets" | "clock">,
  env: Pick<Environment, "id" | "parentEnvironmentId">,
  scopes: string[],
  expiresInSeconds = 3600,
): Promise<string> {
  const key = await environmentSigningKey(deps, env);
  const now = Math.floor(deps.clock.now().getTime() / 1000);
  return new SignJWT({ pub: true, scopes })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(env.id)
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresInSeconds)
    .sign(new TextEncoder().encode(key));
}
