import Fastify, { LogController, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { AppDeps } from "./deps.ts";
import { errorHandler, sendError } from "./http/errors.ts";
import { registerBodyParsers } from "./http/body-parsers.ts";
import { registerHealthRoutes } from "./routes/health.ts";
import { registerOpenApiRoute } from "./routes/openapi.ts";
import { registerTaskRoutes } from "./routes/tasks.ts";
import { registerRunRoutes } from "./routes/runs.ts";
import { registerBatchRoutes } from "./routes/batches.ts";
import { registerPacketRoutes } from "./routes/packets.ts";
import { registerEnvVarRoutes } from "./routes/envvars.ts";
import { registerAuthRoutes } from "./routes/auth.ts";
import { registerProjectRunRoutes } from "./routes/project-runs.ts";
import { registerWaitpointRoutes } from "./routes/waitpoints.ts";
import { registerScheduleRoutes } from "./routes/schedules.ts";

export const DEFAULT_BODY_LIMIT = 3 * 1024 * 1024;

/** Builds the HTTP app from its dependencies; `main.ts` listens, tests use `app.inject`. */
export async function createApp(deps: AppDeps, options: { logger?: Logger | false } = {}): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: (options.logger || undefined) as FastifyInstance["log"] | undefined,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // Path segments such as /api/v2/packets/trigger%2Fpacket_x%2Fpayload.json stay one segment.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => sendError(reply, 404, `No route for ${request.method} ${request.url.split("?")[0]}`));
  registerBodyParsers(app);
  registerHealthRoutes(app, deps);
  registerTaskRoutes(app, deps);
  registerRunRoutes(app, deps);
  registerBatchRoutes(app, deps);
  registerPacketRoutes(app, deps);
  registerEnvVarRoutes(app, deps);
  registerAuthRoutes(app, deps);
  registerProjectRunRoutes(app, deps);
  registerWaitpointRoutes(app, deps);
  registerScheduleRoutes(app, deps);
  registerOpenApiRoute(app);
  return app;
}
