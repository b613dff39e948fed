import type { FastifyInstance } from "fastify";
import { z, type ZodType } from "zod";
import { routesOf, type RouteDefinition } from "../http/route.ts";

function schemaOf(schema: ZodType | undefined) {
  if (!schema) return undefined;
  try {
    return z.toJSONSchema(schema, { target: "openapi-3.0", unrepresentable: "any", io: "input" });
  } catch {
    return {};
  }
}

/** Builds an OpenAPI 3.1 document from the same zod schemas the routes validate with. */
export function buildOpenApiDocument(routes: readonly RouteDefinition<any, any, any>[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, "{$1}");
    const params = route.params ? schemaOf(route.params) as { properties?: Record<string, unknown> } : undefined;
    const query = route.query ? schemaOf(route.query) as { properties?: Record<string, unknown> } : undefined;
    const parameters = [
      ...Object.entries(params?.properties ?? {}).map(([name, schema]) => ({ name, in: "path", required: true, schema })),
      ...Object.entries(query?.properties ?? {}).map(([name, schema]) => ({ name, in: "query", required: false, schema })),
    ];
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      tags: route.tags,
      ...(route.auth ? { security: [{ bearer: [] }] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: schemaOf(route.body) } } } } : {}),
      responses: {
        "200": { description: "OK", ...(route.response ? { content: { "application/json": { schema: schemaOf(route.response) } } } : {}) },
        "400": { description: "Bad request", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
        ...(route.auth ? { "401": { description: "Missing or invalid credential", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } } } : {}),
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "svc API", version: "1.0.0", description: "Durable task runtime on Postgres; Trigger.dev v4 wire protocol." },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: { type: "object", properties: { error: { type: "string" } }, required: ["error"] } },
    },
    paths,
  };
}

export function registerOpenApiRoute(app: FastifyInstance) {
  app.get("/api/openapi.json", async () => buildOpenApiDocument(routesOf(app)));
}
