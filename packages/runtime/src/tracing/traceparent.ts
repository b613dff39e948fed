import { isSpanContextValid, ROOT_CONTEXT, trace, type Context, type SpanContext } from "@opentelemetry/api";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as a W3C `traceparent` (version 00); null for an invalid (non-recording, no-op) one. */
export function traceparentOf(spanContext: SpanContext): string | null {
  if (!isSpanContextValid(spanContext)) return null;
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The span context a W3C `traceparent` carries (remote); null when absent or malformed. */
export function spanContextOf(traceparent: string | null | undefined): SpanContext | null {
  const match = traceparent ? TRACEPARENT.exec(traceparent.trim().toLowerCase()) : null;
  if (!match) return null;
  const spanContext: SpanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return isSpanContextValid(spanContext) ? spanContext : null;
}

/** The context whose parent span a `traceparent` names (the root context without one). */
export function contextOf(traceparent: string | null | undefined): Context {
  const spanContext = spanContextOf(traceparent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}
