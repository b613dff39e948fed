// Public access tokens: HS256 JWTs signed with an environment's secret key, claims from the server.
// The same format the published SDK signs, so tokens from either verify on svc.
import { SignJWT } from "jose";
import { parseDuration } from "../durations.ts";

export const JWT_ISSUER = "https://id.trigger.dev";
export const JWT_AUDIENCE = "https://api.trigger.dev";

/** One id, several ids, or `true` for every resource of that type. */
export type ScopeTarget = string | readonly string[] | true;

/** What a token may touch, per resource type. */
export interface ScopeTargets {
  runs?: ScopeTarget;
  tasks?: ScopeTarget;
  tags?: ScopeTarget;
  batch?: ScopeTarget;
  waitpoints?: ScopeTarget;
  sessions?: ScopeTarget;
}

/** Scopes by action: `{ read: { runs: ["run_1"] }, write: { waitpoints: "waitpoint_1" } }`. */
export interface PublicTokenScopes {
  read?: ScopeTargets;
  write?: ScopeTargets;
  trigger?: ScopeTargets;
  batchTrigger?: ScopeTargets;
}

/** Lifetime: a duration ("15m", "1h", "2d"), seconds from now, or an absolute Date. */
export type Expiration = string | number | Date;

/** @default "1h" — the spec's public-token lifetime. */
export const DEFAULT_PUBLIC_TOKEN_LIFETIME = "1h";

/**
 * Flattens the scope object into `action:type[:id]` strings, in a stable order.
 * `{ read: { runs: ["run_1", "run_2"], tags: "t" } }` → `["read:runs:run_1", "read:runs:run_2", "read:tags:t"]`;
 * `{ read: { runs: true } }` → `["read:runs"]`.
 *
 * @example
 * flattenScopes({ read: { runs: ["run_1"] }, write: { waitpoints: "waitpoint_1" } });
 * // ["read:runs:run_1", "write:waitpoints:waitpoint_1"]
 */
export function flattenScopes(scopes: PublicTokenScopes): string[] {
  const out: string[] = [];
  for (const [action, targets] of Object.entries(scopes) as [string, ScopeTargets | undefined][]) {
    if (!targets) continue;
    for (const [type, target] of Object.entries(targets) as [string, ScopeTarget | undefined][]) {
      if (target === undefined || target === (false as unknown)) continue;
      if (target === true) {
        out.push(`${action}:${type}`);
        continue;
      }
      const ids = typeof target === "string" ? [target] : target;
      for (const id of ids) {
        if (typeof id !== "string" || id.length === 0) throw new TypeError(`scopes.${action}.${type}: ids must be non-empty strings`);
        out.push(`${action}:${type}:${id}`);
      }
    }
  }
  return [...new Set(out)];
}

/** Seconds since the epoch at which a token with this lifetime expires. */
export function expirationSeconds(expiration: Expiration, nowMs: number): number {
  if (expiration instanceof Date) {
    if (Number.isNaN(expiration.getTime())) throw new TypeError("expirationTime: invalid Date");
    return Math.floor(expiration.getTime() / 1000);
  }
  if (typeof expiration === "number") {
    if (!Number.isFinite(expiration) || expiration <= 0) throw new TypeError("expirationTime: expected a positive number of seconds");
    return Math.floor(nowMs / 1000) + Math.floor(expiration);
  }
  const ms = parseDuration(expiration);
  if (ms === null || ms <= 0) throw new TypeError(`expirationTime: "${expiration}" is not a duration such as "15m", "1h" or "2d"`);
  return Math.floor((nowMs + ms) / 1000);
}

/**
 * Signs a public token locally: HS256 keyed with the raw secret key string, the server's claims
 * (`sub` = environment id, `pub: true`) plus `scopes`, iss/aud as the published SDK uses.
 */
export async function signPublicToken(input: {
  secretKey: string;
  claims: Record<string, unknown>;
  scopes?: string[];
  expirationTime?: Expiration;
  extraClaims?: Record<string, unknown>;
  nowMs?: number;
}): Promise<string> {
  const nowMs = input.nowMs ?? Date.now();
  const payload: Record<string, unknown> = { ...input.claims, ...input.extraClaims, pub: true };
  if (input.scopes) payload.scopes = input.scopes;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: "HS256" })
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(expirationSeconds(input.expirationTime ?? DEFAULT_PUBLIC_TOKEN_LIFETIME, nowMs))
    .sign(new TextEncoder().encode(input.secretKey));
}

/**
 * The public access token a trigger/batch/token-create response carries: `x-trigger-jwt` when
 * the server minted one, else self-signed from `x-trigger-jwt-claims` with our secret key
 * (Trigger.dev servers that only send claims). Undefined when neither is possible.
 */
export async function publicTokenFromResponse(
  headers: Headers,
  secretKey: string | undefined,
  scopes: string[],
  expirationTime: Expiration,
): Promise<string | undefined> {
  const ready = headers.get("x-trigger-jwt");
  if (ready) return ready;
  const claimsHeader = headers.get("x-trigger-jwt-claims");
  if (!claimsHeader || !secretKey) return undefined;
  try {
    const claims = JSON.parse(claimsHeader) as Record<string, unknown>;
    return await signPublicToken({ secretKey, claims, scopes, expirationTime });
  } catch {
    return undefined;
  }
}
