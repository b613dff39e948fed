import { createServer } from "node:http";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Tracer } from "@opentelemetry/api";
import type { AppDeps } from "./deps.ts";
import { LogThrottle } from "@svc/runtime/engine";
import { createErrorHandler, sendError } from "./http/errors.ts";
import { registerBodyParsers } from "./http/body-parsers.ts";
import { registerCors } from "./http/cors.ts";
import { registerLingeringClose } from "./http/lingering-close.ts";
import { registerRequestSpans } from "./http/request-spans.ts";
import { DEFAULT_LIMITS, installLimits, type ApiLimits } from "./http/limits.ts";
import { notFoundOrNotAllowed } from "./http/method-not-allowed.ts";
import { registerHealthRoutes } from "./routes/health.ts";
import { registerOpenApiRoute } from "./routes/openapi.ts";
import { registerTaskRoutes } from "./routes/tasks.ts";
import { registerRunRoutes } from "./routes/runs.ts";
import { registerBulkActionRoutes } from "./routes/bulk-actions.ts";
import { registerRunMetadataRoutes } from "./routes/run-metadata.ts";
import { registerRunResultRoutes } from "./routes/run-results.ts";
import { registerRunTraceRoutes } from "./routes/run-trace.ts";
import { registerIdempotencyKeyRoutes } from "./routes/idempotency-keys.ts";
import { registerBatchRoutes } from "./routes/batches.ts";
import { registerPacketRoutes } from "./routes/packets.ts";
import { registerEnvVarRoutes } from "./routes/envvars.ts";
import { registerAuthRoutes } from "./routes/auth.ts";
import { registerProjectRunRoutes } from "./routes/project-runs.ts";
import { registerWaitpointRoutes } from "./routes/waitpoints.ts";
import { registerScheduleRoutes } from "./routes/schedules.ts";
import { registerQueueRoutes } from "./routes/queues.ts";
import { registerConcurrencyLimitRoutes } from "./routes/concurrency-limits.ts";
import { registerSessionRoutes } from "./routes/sessions.ts";
import { registerSessionChannelRoutes } from "./routes/session-channels.ts";
import { registerRealtimeRunRoutes } from "./routes/realtime-runs.ts";
import { registerRunStreamRoutes } from "./routes/run-streams.ts";
import { registerMetricsRoute } from "./routes/metrics.ts";
import { registerRequestTiming } from "./metrics/request-timing.ts";
import { registerDashboard } from "./dashboard/register.ts";

export const DEFAULT_BODY_LIMIT = 3 * 1024 * 1024;
/** Longest path segment the router accepts (packet paths travel as one %-encoded segment). */
const MAX_PARAM_LENGTH = 2048;

export interface AppOptions {
  logger?: Logger | false;
  /** Limits beyond body size; DEFAULT_LIMITS (no rate limit) for what is left out. */
  limits?: Partial<ApiLimits>;
  /** Take the client address from X-Forwarded-For (behind a proxy you trust); default false. */
  trustProxy?: boolean;
  /** Print unhandled errors (500s) whole on stderr besides logging them (SVC_DEBUG_ERRORS); default false. */
  printUnhandledErrors?: boolean;
  /** Traces on (OTEL_EXPORTER_OTLP_ENDPOINT): a span per request; null/absent: no hook at all. */
  tracer?: Tracer | null;
}

/** Builds the HTTP app from its dependencies; `main.ts` listens, tests use `app.inject`. */
export async function createApp(deps: AppDeps, options: AppOptions = {}): Promise<FastifyInstance> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const app: FastifyInstance = Fastify({
    loggerInstance: (options.logger || undefined) as FastifyInstance["log"] | undefined,
    trustProxy: options.trustProxy ?? false,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // A request must arrive whole within requestTimeoutMs (Node's own check, which Fastify turns
    // off), checked often enough that the limit means what it says (Node looks every 30 s).
    // Idle keep-alive connections live 72 s as under Fastify's own server (longer than the 60 s
    // idle timeout of common load balancers, which would otherwise meet a closed connection).
    serverFactory: (handler) =>
      createServer({ requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(limits.requestTimeoutMs / 4))), keepAliveTimeout: 72_000 }, handler),
    // Path segments such as /api/v2/packets/trigger%2Fpacket_x%2Fpayload.json stay one segment.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    logController: new LogController({ disableRequestLogging: true }),
    // Errors the router raises before any route runs (a malformed %-escape, a path segment over
    // maxParamLength) get our `{ error }` shape too, with a message that says what was wrong.
    frameworkErrors: (error, request, reply) => {
      const path = request.url.split("?")[0]!;
      const shown = path.length > 80 ? `${path.slice(0, 80)}…` : path;
      if (error.code === "FST_ERR_MAX_PARAM_LENGTH") return sendError(reply, 414, `A path segment of ${shown} is longer than ${MAX_PARAM_LENGTH} characters`);
      if (error.code === "FST_ERR_BAD_URL") return sendError(reply, 400, `Malformed URL: ${shown} is not valid percent-encoding`);
      return sendError(reply, error.statusCode && error.statusCode < 500 ? error.statusCode : 400, error.message);
    },
  });
  if (options.tracer) registerRequestSpans(app, options.tracer);
  installLimits(app, limits, deps.engine.clock);
  app.setErrorHandler(createErrorHandler(new LogThrottle(deps.engine.clock), { printUnhandled: options.printUnhandledErrors ?? false }));
  app.setNotFoundHandler(notFoundOrNotAllowed(app));
  if (deps.metrics) registerRequestTiming(app, deps.metrics);
  registerLingeringClose(app);
  registerBodyParsers(app);
  await registerCors(app);
  registerHealthRoutes(app, deps);
  registerTaskRoutes(app, deps);
  registerRunRoutes(app, deps);
  registerRunMetadataRoutes(app, deps);
  registerRunResultRoutes(app, deps);
  registerRunTraceRoutes(app, deps);
  registerIdempotencyKeyRoutes(app, deps);
  registerBatchRoutes(app, deps);
  registerBulkActionRoutes(app, deps);
  registerPacketRoutes(app, deps);
  registerEnvVarRoutes(app, deps);
  registerAuthRoutes(app, deps);
  registerProjectRunRoutes(app, deps);
  registerWaitpointRoutes(app, deps);
  registerScheduleRoutes(app, deps);
  registerQueueRoutes(app, deps);
  registerConcurrencyLimitRoutes(app, deps);
  registerSessionRoutes(app, deps);
  registerSessionChannelRoutes(app, deps);
  registerRealtimeRunRoutes(app, deps);
  registerRunStreamRoutes(app, deps);
  registerOpenApiRoute(app, deps);
  if (deps.metrics) registerMetricsRoute(app, deps.metrics);
  await registerDashboard(app, deps);
  return app;
}
