import { createHash } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import {
  activeSecretKeysWithExpiry,
  AuthenticationError,
  findUserIdByPersonalAccessToken,
  getLiveEnvironment,
  type EngineDeps,
} from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import type { Principal } from "./principal.ts";
import { JWT_AUDIENCE, JWT_ISSUER } from "./public-tokens.ts";
import type { SecretKeyCache, SigningKeys, VerifiedToken } from "./secret-key-cache.ts";

type PublicJwtPrincipal = Extract<Principal, { kind: "publicJwt" }>;

const INVALID = "Public Access Token is invalid";
const EXPIRED = "Public Access Token has expired";

/** Reads the unverified payload, or fails as an invalid token. Only used to find the environment. */
function unverifiedClaims(token: string): JWTPayload {
  try {
    const header = decodeProtectedHeader(token);
    // Checked before any key is touched: `alg: none` and asymmetric algorithms never verify here.
    if (header.alg !== "HS256") throw new AuthenticationError(`${INVALID}: only HS256 tokens are accepted`);
    return decodeJwt(token);
  } catch (error) {
    if (error instanceof AuthenticationError) throw error;
    throw new AuthenticationError(INVALID);
  }
}

/**
 * Checks the claims jose does not check for us: `pub: true`, and the issuer and audience the
 * published SDK signs with when present (tokens minted by svc always carry both).
 */
function checkClaims(payload: JWTPayload): string[] {
  if (payload.pub !== true) throw new AuthenticationError(`${INVALID}: not a public access token`);
  if (payload.iss !== undefined && payload.iss !== JWT_ISSUER) throw new AuthenticationError(`${INVALID}: unexpected issuer`);
  if (payload.aud !== undefined) {
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!audiences.includes(JWT_AUDIENCE)) throw new AuthenticationError(`${INVALID}: unexpected audience`);
  }
  const scopes = payload.scopes ?? [];
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === "string")) throw new AuthenticationError(`${INVALID}: scopes must be a list of strings`);
  return scopes;
}

/**
 * Verifies a public access token: HS256, signed with a currently valid secret key of the
 * environment named by `sub` (for a preview branch: its parent preview environment's keys),
 * `exp` present and in the future by the engine clock, `pub: true`. With a cache, a token it
 * verified before (and that still stands now) is not verified again.
 */
export async function verifyPublicJwt(engine: EngineDeps, token: string, cache?: SecretKeyCache): Promise<PublicJwtPrincipal> {
  if (!cache) return (await verifyToken(engine, token)).principal;
  const now = engine.clock.now();
  return cache.verifiedPublicToken(token, now, () => verifyToken(engine, token, cache));
}

/** Verifies a token (see verifyPublicJwt), and says until when the verification stands. */
async function verifyToken(engine: EngineDeps, token: string, cache?: SecretKeyCache): Promise<VerifiedToken<PublicJwtPrincipal>> {
  const claims = unverifiedClaims(token);
  const sub = claims.sub;
  if (typeof sub !== "string" || sub.length === 0) throw new AuthenticationError(`${INVALID}: missing subject`);
  const now = engine.clock.now();
  const lookup = () => signingKeysOf(engine, sub, now);
  const signing = cache ? await cache.signingKeysFor(sub, now, lookup) : await lookup();
  if (!signing) throw new AuthenticationError(INVALID);
  const { environment, keys } = signing;
  // Keys inside their rotation grace period are tried too, newest first.
  for (const key of keys) {
    try {
      const { payload } = await jwtVerify(token, new TextEncoder().encode(key), {
        algorithms: ["HS256"],
        currentDate: now,
        requiredClaims: ["exp"],
      });
      const scopes = checkClaims(payload);
      const principal: PublicJwtPrincipal = {
        kind: "publicJwt",
        environment,
        scopes,
        claims: payload as Record<string, unknown>,
        ...(payload.otu === true ? { oneTimeUseToken: createHash("sha256").update(token).digest("hex") } : {}),
      };
      // `exp` is required (jwtVerify checked it is a number).
      const expiry = (payload.exp as number) * 1000;
      const validUntil = signing.firstExpiry && signing.firstExpiry.getTime() < expiry ? signing.firstExpiry : new Date(expiry);
      return { principal, validUntil };
    } catch (error) {
      if (error instanceof AuthenticationError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new AuthenticationError(EXPIRED);
      if (error instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      throw new AuthenticationError(INVALID);
    }
  }
  throw new AuthenticationError(INVALID);
}

/** The environment a token's `sub` names and the keys that sign its tokens (a preview branch's parent's), or null. */
async function signingKeysOf(engine: EngineDeps, environmentId: string, now: Date): Promise<SigningKeys | null> {
  const environment = await getLiveEnvironment(engine.db, environmentId);
  if (!environment) return null;
  return { environment, ...(await activeSecretKeysWithExpiry(engine.db, engine.secrets, environment.parentEnvironmentId ?? environment.id, now)) };
}

/** The user id of a valid (known, not revoked) personal access token, or null. */
export async function verifyPersonalAccessToken(engine: EngineDeps, token: string): Promise<string | null> {
  return findUserIdByPersonalAccessToken(engine.db, token);
}

/** The PAT and public-JWT verifiers wired into the app (`createApp({ engine, ...credentialVerifiers(engine) })`). */
export function credentialVerifiers(engine: EngineDeps, cache?: SecretKeyCache): Pick<AppDeps, "verifyPersonalAccessToken" | "verifyPublicJwt"> {
  return {
    verifyPersonalAccessToken: (token) => verifyPersonalAccessToken(engine, token),
    verifyPublicJwt: (token) => verifyPublicJwt(engine, token, cache),
  };
}
