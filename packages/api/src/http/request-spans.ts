import { SpanKind, SpanStatusCode, type Span, type Tracer } from "@opentelemetry/api";
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_URL_PATH } from "@opentelemetry/semantic-conventions";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { contextOf, traceparentOf } from "@svc/runtime/engine";

declare module "fastify" {
  interface FastifyRequest {
    /** Traces on: the W3C traceparent of this request's span (a run it triggers is its child). */
    traceparent?: string;
  }
}

/** What a trigger's lineage carries from the request: its span's traceparent (traces on), else nothing. */
export function traceOf(request: FastifyRequest): { traceparent?: string } {
  return request.traceparent ? { traceparent: request.traceparent } : {};
}

/**
 * A span per HTTP request (`METHOD /route/:template`, kind SERVER), the child of the `traceparent`
 * header the client sent, if any. Registered only when traces are on: off, no hook runs.
 */
export function registerRequestSpans(app: FastifyInstance, tracer: Tracer): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  app.decorateRequest("traceparent", undefined);
  app.addHook("onRequest", async (request) => {
    const route = request.routeOptions.url;
    const header = request.headers.traceparent;
    const span = tracer.startSpan(
      `${request.method} ${route ?? "unmatched"}`,
      {
        kind: SpanKind.SERVER,
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: request.method, [ATTR_URL_PATH]: request.url.split("?")[0]!, ...(route ? { [ATTR_HTTP_ROUTE]: route } : {}) },
      },
      contextOf(typeof header === "string" ? header : undefined),
    );
    spans.set(request, span);
    request.traceparent = traceparentOf(span.spanContext()) ?? undefined;
  });
  const end = (request: FastifyRequest, statusCode: number | null) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    if (statusCode !== null) {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
      if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: "request aborted" });
    }
    span.end();
  };
  app.addHook("onResponse", async (request, reply) => end(request, reply.statusCode));
  app.addHook("onRequestAbort", async (request) => end(request, null));
}
