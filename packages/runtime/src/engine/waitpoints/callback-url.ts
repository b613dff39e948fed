import { createHmac, timingSafeEqual } from "node:crypto";

const ID_PREFIX = "waitpoint_";

/**
 * The callback hash of a token: hex HMAC-SHA256 keyed with the environment's secret key (the
 * parent's for a preview branch) over the id without its `waitpoint_` prefix, as Trigger.dev does.
 * Knowing the URL is the credential, so it must not be guessable from the id alone.
 */
export function callbackHash(signingKey: string, waitpointId: string): string {
  const bare = waitpointId.startsWith(ID_PREFIX) ? waitpointId.slice(ID_PREFIX.length) : waitpointId;
  return createHmac("sha256", signingKey).update(bare).digest("hex");
}

/** `{apiUrl}/api/v1/waitpoints/tokens/{id}/callback/{hash}`: a POST there completes the token. */
export function callbackUrl(apiUrl: string, waitpointId: string, signingKey: string): string {
  return `${apiUrl.replace(/\/+$/, "")}/api/v1/waitpoints/tokens/${waitpointId}/callback/${callbackHash(signingKey, waitpointId)}`;
}

/**
 * Whether `hash` is the callback hash under any of `signingKeys` (every active key of the
 * environment, so URLs minted before a key rotation keep working through its grace period).
 * Compared in constant time.
 */
export function callbackHashMatches(signingKeys: string[], waitpointId: string, hash: string): boolean {
  if (!/^[0-9a-fA-F]{64}$/.test(hash)) return false;
  const given = Buffer.from(hash, "hex");
  let matched = false;
  for (const key of signingKeys) {
    // No early exit: the time taken does not reveal which key (if any) matched.
    if (timingSafeEqual(given, Buffer.from(callbackHash(key, waitpointId), "hex"))) matched = true;
  }
  return matched;
}
