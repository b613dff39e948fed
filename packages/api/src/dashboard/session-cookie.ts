import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

/** The signed-in browser's session token (httpOnly; only its SHA-256 is stored). */
export const SESSION_COOKIE = "svc_dashboard";
/** The sign-in form's CSRF token, double-submitted: this cookie and the form's hidden `_csrf` must match. */
export const LOGIN_CSRF_COOKIE = "svc_dashboard_csrf";

/**
 * Cookies live under /dashboard only, out of reach of scripts (httpOnly), and are not sent on
 * cross-site subrequests or form posts (SameSite=Lax; a link from elsewhere still opens the page
 * signed in). `Secure` when the request came over HTTPS (behind a proxy: with TRUST_PROXY).
 */
function cookieOptions(request: FastifyRequest, maxAgeSeconds?: number) {
  return {
    path: "/dashboard",
    httpOnly: true,
    sameSite: "lax" as const,
    secure: request.protocol === "https",
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
  };
}

export function setCookie(request: FastifyRequest, reply: FastifyReply, name: string, value: string, maxAgeSeconds?: number): void {
  reply.setCookie(name, value, cookieOptions(request, maxAgeSeconds));
}

export function clearCookie(request: FastifyRequest, reply: FastifyReply, name: string): void {
  reply.clearCookie(name, cookieOptions(request));
}

export function newCsrfToken(): string {
  return randomBytes(24).toString("base64url");
}

/** Constant-time comparison of a submitted token with the expected one; false for anything missing. */
export function tokensMatch(submitted: unknown, expected: string | undefined): boolean {
  if (typeof submitted !== "string" || !expected) return false;
  const a = Buffer.from(submitted);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Where to go after signing in: a dashboard path of this site, or /dashboard. Anything else
 * (another origin, `//evil`, `/\evil`, a non-dashboard path, half a surrogate pair) is ignored,
 * so the login form is no open redirect. It becomes a `Location` header, which carries ASCII only:
 * every other character (a space, `é`, `€`) is percent-encoded as UTF-8, never sent as raw bytes.
 */
export function safeNext(value: unknown): string {
  if (typeof value !== "string") return "/dashboard";
  if (!/^\/dashboard(\/[^\\]*)?(\?[^\\]*)?$/.test(value) || value.startsWith("//") || /[\u0000-\u001f\u007f]/.test(value) || !value.isWellFormed()) return "/dashboard";
  return value.replace(/[^\x21-\x7e]/gu, (char) => encodeURIComponent(char));
}
