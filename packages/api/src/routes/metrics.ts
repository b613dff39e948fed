import type { FastifyInstance } from "fastify";
import type { ApiMetrics } from "../metrics/api-metrics.ts";
import { bearerMatches } from "@svc/runtime/engine";
import { sendError } from "../http/errors.ts";

/**
 * GET /metrics: the process's metrics in the Prometheus text format. Not part of the OpenAPI
 * document (an operator's route, like /healthz). With METRICS_TOKEN set, it requires
 * `Authorization: Bearer <token>`.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: ApiMetrics) {
  app.get("/metrics", async (request, reply) => {
    if (metrics.token && !bearerMatches(request.headers.authorization, metrics.token)) {
      reply.header("www-authenticate", "Bearer");
      return sendError(reply, 401, "Missing or wrong metrics token: send Authorization: Bearer <METRICS_TOKEN>");
    }
    let text: string;
    try {
      text = await metrics.registry.metrics();
    } catch (error) {
      request.log.warn({ err: error }, "metrics could not be collected");
      return sendError(reply, 503, `Metrics could not be collected: ${(error as Error)?.message ?? String(error)}`);
    }
    return reply.type(metrics.registry.contentType).send(text);
  });
}
