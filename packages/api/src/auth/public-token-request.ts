import { MAX_DURATION_MS, parseTtl, ValidationError } from "@svc/runtime/engine";
import { parseScope, SCOPE_ACTIONS, SCOPE_TYPES } from "./scopes.ts";

/** How long a public token minted without `expirationTime` lives: the SDK's own default when it signs one locally. */
export const DEFAULT_PUBLIC_TOKEN_SECONDS = 15 * 60;

/**
 * Seconds from `now` until a public token asked for with `expirationTime` expires: a duration
 * ("15m", "1h") from now, or a Unix time in seconds (what the SDK sends for a Date or a number),
 * which must be in the future. Absent: DEFAULT_PUBLIC_TOKEN_SECONDS. At most MAX_DURATION_MS.
 */
export function publicTokenLifetime(expirationTime: string | number | undefined, now: Date): number {
  if (expirationTime === undefined) return DEFAULT_PUBLIC_TOKEN_SECONDS;
  const nowS = Math.floor(now.getTime() / 1000);
  const seconds = typeof expirationTime === "number" ? Math.floor(expirationTime) - nowS : Math.ceil(parseTtl(expirationTime, "expirationTime") / 1000);
  if (seconds <= 0) throw new ValidationError("expirationTime: must be in the future");
  if (seconds * 1000 > MAX_DURATION_MS) throw new ValidationError(`expirationTime: at most ${MAX_DURATION_MS / 86_400_000}d from now`);
  return seconds;
}

/** Refuses scopes svc would never grant anything with (an unknown action or resource type). */
export function checkRequestedScopes(scopes: string[]): void {
  for (const scope of scopes) {
    const { action, type } = parseScope(scope);
    if (!(SCOPE_ACTIONS as readonly string[]).includes(action)) throw new ValidationError(`scopes: "${scope}" has an unknown action (one of ${SCOPE_ACTIONS.join(", ")})`);
    if (type !== undefined && !(SCOPE_TYPES as readonly string[]).includes(type)) throw new ValidationError(`scopes: "${scope}" has an unknown resource type (one of ${SCOPE_TYPES.join(", ")})`);
  }
}
