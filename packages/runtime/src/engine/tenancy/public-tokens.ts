import { createHmac } from "node:crypto";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "./environments.ts";
import { activeSecretKeys } from "./secret-keys.ts";

/** The issuer and audience the published SDK signs public tokens with; svc uses and accepts the same. */
export const JWT_ISSUER = "https://id.trigger.dev";
export const JWT_AUDIENCE = "https://api.trigger.dev";

/** The key that signs an environment's JWTs and callback URLs: its own secret key, or its parent's for a preview branch. */
export async function environmentSigningKey(deps: Pick<EngineDeps, "db" | "secrets" | "clock">, env: Pick<Environment, "id" | "parentEnvironmentId">): Promise<string> {
  const keyEnvironmentId = env.parentEnvironmentId ?? env.id;
  const now = deps.clock.now().getTime();
  let cache = signingKeys.get(deps.db);
  if (!cache) signingKeys.set(deps.db, (cache = new Map()));
  const cached = cache.get(keyEnvironmentId);
  if (cached && cached.until > now) return cached.key;
  const [key] = await activeSecretKeys(deps.db, deps.secrets, keyEnvironmentId, deps.clock.now());
  if (!key) throw new Error(`environment ${keyEnvironmentId} has no secret key`);
  cache.set(keyEnvironmentId, { key, until: now + SIGNING_KEY_CACHE_MS });
  return key;
}

/**
 * Signing keys are read (and decrypted) once per environment every few seconds, not on every
 * trigger response. Safe across rotation: verification accepts every key still in its grace period.
 */
const SIGNING_KEY_CACHE_MS = 10_000;
const signingKeys = new WeakMap<object, Map<string, { key: string; until: number }>>();

/** A public access token: HS256 with the environment's secret key, `sub` = environment id, `pub: true`, `scopes`. */
export async function mintEnvironmentToken(
  deps: Pick<EngineDeps, "db" | "secrets" | "clock">,
  env: Pick<Environment, "id" | "parentEnvironmentId">,
  scopes: string[],
  expiresInSeconds = 3600,
  realtime?: { skipColumns?: string[] },
): Promise<string> {
  return signEnvironmentToken(await environmentSigningKey(deps, env), deps.clock.now(), env, scopes, expiresInSeconds, realtime);
}

/** The protected header of every token, base64url-encoded: `{"alg":"HS256"}`. */
const HS256_HEADER = Buffer.from(JSON.stringify({ alg: "HS256" })).toString("base64url");

/**
 * mintEnvironmentToken with the signing key already at hand (no database read): the JWS compact
 * serialization (RFC 7515 §7.1) of the claims, HMAC-SHA256 over `header.payload` with the key's
 * UTF-8 bytes, signed synchronously with node:crypto. The same bytes jose's SignJWT produces for
 * these claims (a test compares them), where jose signs through WebCrypto: an async job on the
 * libuv thread pool per token, which took 14 % of an API process's CPU under BENCH=scaleout
 * (measured 25 Nov; the commit that made the change says how). Tokens are verified with jose (auth/verifiers.ts).
 */
export function signEnvironmentToken(key: string, at: Date, env: Pick<Environment, "id">, scopes: string[], expiresInSeconds: number, realtime?: { skipColumns?: string[] }): string {
  const now = Math.floor(at.getTime() / 1000);
  // `realtime` (skipColumns for realtime subscriptions) only when asked for: the claims are otherwise unchanged.
  const claims = { pub: true, scopes, ...(realtime ? { realtime } : {}), sub: env.id, iss: JWT_ISSUER, aud: JWT_AUDIENCE, iat: now, exp: now + expiresInSeconds };
  const signingInput = `${HS256_HEADER}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  return `${signingInput}.${createHmac("sha256", key).update(signingInput).digest("base64url")}`;
}
