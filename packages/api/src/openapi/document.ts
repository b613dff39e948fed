import type { RouteDefinition } from "../http/route.ts";
import { toJsonSchema, type JsonSchema } from "./json-schema.ts";
import { ERROR_SCHEMA, ERROR_STATUSES, errorStatusesOf } from "./statuses.ts";

type Route = RouteDefinition<any, any, any>;

/** The OpenAPI name of a route's `*` tail: a packet's path, one %2F-encoded segment as the SDK sends it. */
export const WILDCARD_PARAM = "file";

/** `/api/v3/runs/:runId` → `/api/v3/runs/{runId}`; a trailing `*` becomes `{file}`. */
export function openApiPath(url: string): string {
  return url.replace(/:(\w+)/g, "{$1}").replace(/\*$/, `{${WILDCARD_PARAM}}`);
}

/** `runs.list` → `runs_list`. */
export function operationIdOf(route: Route): string {
  return route.operation.replace(/\./g, "_");
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  auth: "Public access tokens",
  batches: "Batches of runs",
  envvars: "Environment variables of a project's environments",
  health: "Liveness, readiness and this document",
  packets: "Large payloads and outputs, stored out of band",
  runs: "Runs: list, retrieve, cancel, replay, reschedule, tags, results, traces, idempotency keys",
  schedules: "Cron schedules",
  sessions: "Sessions: a task's conversation with its callers, over an `.in` and an `.out` channel, across runs",
  tasks: "Triggering tasks",
  waitpoints: "Waitpoint tokens a run can wait for",
};

const errorRef = (status: number) => ({ $ref: `#/components/responses/${ERROR_STATUSES[status]!.name}` });

function parametersOf(route: Route, defs: Record<string, JsonSchema>) {
  const parameters: Record<string, unknown>[] = [];
  for (const [location, schema] of [["path", route.params], ["query", route.query]] as const) {
    if (!schema) continue;
    const object = toJsonSchema(schema, defs) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, property] of Object.entries(object.properties ?? {})) {
      const { description, ...rest } = property as { description?: string };
      parameters.push({
        name: name === "*" ? WILDCARD_PARAM : name,
        in: location,
        required: location === "path" || (object.required ?? []).includes(name),
        ...(name === "*" ? { description: "The packet's path, e.g. `run_x/payload.json`, with its slashes %2F-encoded (or as several segments)" } : description ? { description } : {}),
        schema: rest,
      });
    }
  }
  for (const header of route.documentedHeaders ?? []) {
    parameters.push({ name: header.name, in: "header", required: false, description: header.description, schema: toJsonSchema(header.schema, defs) });
  }
  return parameters;
}

function requestBodyOf(route: Route, defs: Record<string, JsonSchema>) {
  if (route.body) return { required: true, content: { "application/json": { schema: toJsonSchema(route.bodyDocument ?? route.body, defs) } } };
  const documented = route.documentedBody;
  if (!documented) return undefined;
  return {
    required: documented.required,
    description: documented.description,
    content: { [documented.mediaType]: { schema: documented.schema ? toJsonSchema(documented.schema, defs) : {} } },
  };
}

function operationOf(route: Route, defs: Record<string, JsonSchema>) {
  const parameters = parametersOf(route, defs);
  const requestBody = requestBodyOf(route, defs);
  const content = { [route.responseMediaType ?? "application/json"]: { schema: route.response ? toJsonSchema(route.response, defs) : {} } };
  const success = {
    description: route.successDescription ?? (route.status === 202 ? "Accepted" : "OK"),
    ...(route.successHeaders ? { headers: route.successHeaders } : {}),
    content,
  };
  const responses: Record<string, unknown> = { [String(route.status ?? 200)]: success };
  for (const other of route.alsoSucceeds ?? []) responses[String(other.status)] = { description: other.description, content };
  for (const status of errorStatusesOf(route)) responses[String(status)] = errorRef(status);
  for (const [status, other] of Object.entries(route.otherResponses ?? {})) {
    responses[status] = { description: other.description, content: { "application/json": { schema: other.schema } } };
  }
  return {
    operationId: operationIdOf(route),
    summary: route.summary,
    tags: route.tags,
    // Unauthenticated routes (a presigned or signed URL is the credential, or public data) opt out of the root requirement.
    ...(route.auth ? {} : { security: [] }),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

const OK_SCHEMA = { type: "object", properties: { ok: { const: true } }, required: ["ok"] };

/**
 * The routes outside `defineRoute`: liveness, readiness and this document. They take no credential
 * and no rate limit (a load balancer's health checks must never be refused for their number).
 */
function serviceOperations() {
  const plain = (operationId: string, summary: string, responses: Record<string, unknown>) => ({
    get: { operationId, summary, tags: ["health"], security: [], responses: { ...responses, "400": errorRef(400), "405": errorRef(405) } },
  });
  return {
    "/healthz": plain("health_live", "Liveness: the process is up", { "200": { description: "OK", content: { "application/json": { schema: OK_SCHEMA } } } }),
    "/readyz": plain("health_ready", "Readiness: the database is reachable and every migration applied", {
      "200": { description: "Ready", content: { "application/json": { schema: OK_SCHEMA } } },
      "503": {
        description: "Not ready: the database is unreachable or migrations are missing",
        content: { "application/json": { schema: { type: "object", properties: { ok: { const: false }, error: { type: "string" } }, required: ["ok", "error"] } } },
      },
    }),
    "/api/openapi.json": plain("openapi_document", "This OpenAPI document", { "200": { description: "OK", content: { "application/json": { schema: { type: "object" } } } } }),
  };
}

/** Builds the OpenAPI 3.1 document from the same zod schemas the routes validate with. */
export function buildOpenApiDocument(routes: readonly Route[], serverUrl: string) {
  const defs: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[openApiPath(route.url)] ??= {})[route.method.toLowerCase()] = operationOf(route, defs);
  Object.assign(paths, serviceOperations());
  const used = new Set([...routes.flatMap(errorStatusesOf), 400, 405]);
  const responses = Object.fromEntries(
    Object.entries(ERROR_STATUSES)
      .filter(([status]) => used.has(Number(status)))
      .map(([, { name, description, headers, noBody }]) => [
        name,
        { description, ...(headers ? { headers } : {}), ...(noBody ? {} : { content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }) },
      ]),
  );
  const tags = [...new Set([...routes.flatMap((route) => route.tags ?? []), "health"])].sort().map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name }));
  return {
    openapi: "3.1.0",
    info: {
      title: "svc API",
      version: "1.0.0",
      description: "Durable task runtime on Postgres; Trigger.dev v4 wire protocol.",
    },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    tags,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "A secret key (`svc_dev_…`), a personal access token (`svc_pat_…`) or a public access token (JWT), as each operation accepts" },
      },
      schemas: { Error: ERROR_SCHEMA, ...defs },
      responses,
    },
    paths,
  };
}
