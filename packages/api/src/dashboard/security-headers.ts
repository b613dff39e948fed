import type { FastifyReply } from "fastify";

/**
 * Every dashboard response's security headers. The CSP allows scripts, styles and requests from
 * this origin only, no inline script or style at all (htmx runs with its inline indicator styles
 * and eval turned off, see layout.ts), no framing, forms posting only here.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

export function setSecurityHeaders(reply: FastifyReply): void {
  reply
    .header("content-security-policy", DASHBOARD_CSP)
    .header("x-content-type-options", "nosniff")
    .header("x-frame-options", "DENY")
    .header("referrer-policy", "same-origin")
    .header("cross-origin-opener-policy", "same-origin");
}
