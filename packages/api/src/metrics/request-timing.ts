import type { FastifyInstance } from "fastify";
import type { ApiMetrics } from "./api-metrics.ts";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * Times every answered request into svc_http_request_duration_seconds, labelled with the route's
 * template (`/api/v3/runs/:runId`), never the URL itself: the label set stays as small as the route
 * table. Requests no route matched (404s, 405s, malformed URLs) share the route label "unmatched".
 */
export function registerRequestTiming(app: FastifyInstance, metrics: ApiMetrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url;
    metrics.httpDuration.observe(
      { method: METHODS.has(request.method) ? request.method : "OTHER", route: route && !request.is404 ? route : "unmatched", status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
