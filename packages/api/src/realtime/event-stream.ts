import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { ValidationError } from "@svc/runtime/engine";
import { bearerToken, type Principal } from "../auth/principal.ts";
import { sendError } from "../http/errors.ts";
import type { SubscriptionCounter } from "./subscription-limits.ts";

/** Seconds a client refused for too many open subscriptions is asked to wait (one may end by then). */
const SUBSCRIPTION_RETRY_AFTER_SECONDS = 5;

/** `Timeout-Seconds`: 1 to 600, exactly as the pattern the document shows says (no leading zero, no 0). */
export const TimeoutSeconds = z.string().regex(/^([1-9]|[1-9][0-9]|[1-5][0-9][0-9]|600)$/, "must be a whole number of seconds from 1 to 600").transform(Number);

/** A request header's value (the first, when it came more than once). */
export function requestHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A header parsed by `schema`; absent or empty: undefined; not what it must be: 400 naming it. */
export function parseHeader<T extends z.ZodType>(schema: T, value: string | undefined, name: string): z.infer<T> | undefined {
  if (value === undefined || value === "") return undefined;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError(`${name}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}

/**
 * Holds one open event stream of a public token (secret keys are not counted) until the response
 * closes: null. When the token, or its client address, already holds as many as it may, the
 * request is answered 429 with `retry-after`, and that reply is returned (the handler returns it).
 */
export function holdStreamSubscription(counter: SubscriptionCounter, principal: Principal, request: FastifyRequest, reply: FastifyReply): FastifyReply | null {
  if (principal.kind !== "publicJwt") return null;
  const held = counter.acquire(bearerToken(requestHeader(request, "authorization")) ?? "", request.ip);
  if (!held.ok) {
    reply.header("retry-after", String(SUBSCRIPTION_RETRY_AFTER_SECONDS));
    const who = held.by === "token" ? "this token" : `public tokens from ${request.ip}`;
    return sendError(reply, 429, `Too many open subscriptions: ${who} may hold at most ${held.max} at once; close one or retry in ${SUBSCRIPTION_RETRY_AFTER_SECONDS} s`);
  }
  // Released when the response closes; a client that hung up during the awaits before has closed it already.
  const raw = reply.raw;
  if (raw.destroyed || raw.closed) held.release();
  else raw.once("close", () => held.release());
  return null;
}

/** Starts the SSE response: the reply's own headers (CORS) and the stream's, then ours to write. */
export function openEventStream(reply: FastifyReply, extra: Record<string, string> = {}): void {
  const headers: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value as string | number | string[];
  reply.hijack();
  reply.raw.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
    "x-stream-version": "v2",
    ...extra,
  });
  reply.raw.flushHeaders();
}
