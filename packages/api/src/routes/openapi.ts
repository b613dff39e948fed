import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../deps.ts";
import { routesOf } from "../http/route.ts";
import { buildOpenApiDocument } from "../openapi/document.ts";

export function registerOpenApiRoute(app: FastifyInstance, deps: AppDeps) {
  app.get("/api/openapi.json", async () => buildOpenApiDocument(routesOf(app), deps.engine.apiUrl));
}
