import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Whether an Authorization header carries `Bearer <token>`. Compared in constant time: both sides
 * are hashed first, so neither the token's length nor its content shows in the timing.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (typeof header !== "string") return false;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  const given = match ? match[1]!.trim() : "";
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
