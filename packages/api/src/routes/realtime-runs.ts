import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { getRun, MAX_TAG_SHAPE_RUNS, NotFoundError, parseDuration, retrieveBatch, ValidationError, type RunRow } from "@svc/runtime/engine";
import { BatchIdParams, RunIdParams } from "@svc/runtime/contracts";
import { DURATION_SCHEMA } from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import type { Principal } from "../auth/principal.ts";
import { hasScope, requireScope } from "../auth/scopes.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { limitsOf } from "../http/limits.ts";
import { defineRoute, type RouteDefinition } from "../http/route.ts";
import { SHAPE_QUERY, SHAPE_SUCCESS_HEADERS, serveShape } from "../realtime/serve-shape.ts";
import { MUST_REFETCH_BODY } from "../realtime/shape-wire.ts";

/** A tag subscription follows runs created this long ago at most, unless `createdAt` says less. */
const DEFAULT_CREATED_AT = "24h";
/** The longest `createdAt` window a tag subscription may ask for (longer ones are cut to it). */
export const MAX_CREATED_AT_MS = 7 * 24 * 3600_000;

/** 1 to 10 tags of 1 to 128 characters (no comma, no NUL), separated by commas: what a run may carry. */
const TagList = z.string().regex(/^[^,\u0000]{1,128}(,[^,\u0000]{1,128}){0,9}$/, "must be 1 to 10 tags of 1 to 128 characters, separated by commas");

const SHAPE_SUCCESS = {
  responseMediaType: "application/json",
  successDescription:
    "A JSON array of change messages (`{key, value, headers: {operation}}`, `value` the run's columns as Postgres text) ending with `{\"headers\":{\"control\":\"up-to-date\"}}`: every row on `offset=-1`, else the rows changed since `offset`",
  successHeaders: SHAPE_SUCCESS_HEADERS,
  response: z.array(
    z.union([
      z.object({
        key: z.string().describe("The run's key: `\"public\".\"runs\"/\"<run id>\"`"),
        value: z.record(z.string(), z.string().nullable()).describe("The run's columns (those not skipped), each as Postgres text or null; `electric-schema` gives their types"),
        headers: z.object({ operation: z.enum(["insert", "update"]) }),
      }),
      z.object({ headers: z.object({ control: z.literal("up-to-date") }) }),
    ]),
  ),
  otherResponses: {
    409: {
      description: `The handle is not this shape's, or the offset is not a snapshot of this database (or is ahead of it): drop the rows and read again from offset -1 with the \`electric-handle\` given (body \`${MUST_REFETCH_BODY}\`)`,
      schema: {
        type: "array",
        items: { type: "object", properties: { headers: { type: "object", properties: { control: { const: "must-refetch" } }, required: ["control"] } }, required: ["headers"] },
      },
    },
  },
  // Too many live requests open for this public token or client address (subscription-limits.ts).
  errors: [429],
} satisfies Partial<RouteDefinition<any, any, any>>;

/** The scopes any one of which lets a public token read a run (as GET /api/v3/runs/{id}). */
function runScopes(run: RunRow): string[] {
  return [`read:runs:${run.id}`, `read:tasks:${run.task_identifier}`, ...run.tags.map((tag) => `read:tags:${tag}`), ...(run.batch_id ? [`read:batch:${run.batch_id}`] : []), "read:runs"];
}

/** The lower bound of a tag subscription's window: from its handle when it has one (the window stays put), else from `createdAt`. */
function createdAfterOf(now: number, createdAt: string | undefined, handle: string | undefined): { createdAfter: Date; handle: string } {
  const pinned = handle !== undefined && /^tags-[0-9]{1,15}$/.test(handle) ? Number(handle.slice(5)) : null;
  if (handle !== undefined && pinned !== null && pinned >= now - MAX_CREATED_AT_MS) return { createdAfter: new Date(pinned), handle };
  const ms = parseDuration(createdAt ?? DEFAULT_CREATED_AT);
  if (ms === null) throw new ValidationError(`Invalid query: createdAt: "${createdAt}" is not a duration (e.g. "1h", "2d")`);
  const after = now - Math.min(ms, MAX_CREATED_AT_MS);
  return { createdAfter: new Date(after), handle: `tags-${after}` };
}

export function registerRealtimeRunRoutes(app: FastifyInstance, deps: AppDeps) {
  const limits = limitsOf(app);
  const serve = (principal: Principal, rest: Pick<Parameters<typeof serveShape>[0], "shape" | "handle" | "query" | "request" | "reply">) =>
    serveShape({ deps, principal, environment: environmentOf(principal), counter: limits.runSubscriptions, livePollMs: limits.realtimeLivePollMs, ...rest });

  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/runs/:runId",
    operation: "runs.subscribeToRun",
    summary: "Subscribe to a run (ElectricSQL shape protocol, as runs.subscribeToRun and useRealtimeRun read it)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    query: z.object(SHAPE_QUERY),
    ...SHAPE_SUCCESS,
    async handler({ principal, params, query, request, reply }) {
      const env = environmentOf(principal);
      const initial = query.offset === undefined || query.offset === "-1";
      // A token scoped to the run itself needs no lookup on each long poll; the first request
      // looks the run up all the same (404 before 403, as the run's GET).
      if (initial || !hasScope(principal, [`read:runs:${params.runId}`, "read:runs"])) {
        const run = await getRun(deps.engine.db, params.runId, env.id);
        if (!run) throw new NotFoundError("Run not found");
        requireScope(principal, runScopes(run));
      }
      return serve(principal, { shape: { kind: "run", runId: params.runId }, handle: `run-${params.runId}`, query, request, reply });
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/runs",
    operation: "runs.subscribeToRunsWithTag",
    summary: `Subscribe to the runs with every one of the tags (none: every run) created in the last \`createdAt\` (default ${DEFAULT_CREATED_AT}, at most 7d): the newest ${MAX_TAG_SHAPE_RUNS}`,
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    query: z.object({
      ...SHAPE_QUERY,
      tags: TagList.optional().describe("Tags, comma-separated: a run must carry every one"),
      createdAt: z
        .string()
        .max(100)
        .meta({ ...DURATION_SCHEMA, description: `How far back the runs were created, a duration ("1h", "2d"; default ${DEFAULT_CREATED_AT}, at most 7d)` })
        .optional(),
    }),
    ...SHAPE_SUCCESS,
    async handler({ principal, query, request, reply }) {
      const tags = query.tags ? [...new Set(query.tags.split(","))] : [];
      requireScope(principal, ["read:runs", "read:tags", ...tags.map((tag) => `read:tags:${tag}`)]);
      const handle = query.handle ?? query.shape_id;
      const window = createdAfterOf(deps.engine.clock.now().getTime(), query.createdAt, query.offset === undefined || query.offset === "-1" ? undefined : handle);
      return serve(principal, { shape: { kind: "tags", tags, createdAfter: window.createdAfter }, handle: window.handle, query, request, reply });
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/realtime/v1/batches/:batchId",
    operation: "runs.subscribeToBatch",
    summary: "Subscribe to the runs of a batch (ElectricSQL shape protocol, as runs.subscribeToBatch reads it)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: BatchIdParams,
    query: z.object(SHAPE_QUERY),
    ...SHAPE_SUCCESS,
    async handler({ principal, params, query, request, reply }) {
      const env = environmentOf(principal);
      // 404 before 403, as the batch's GET; later requests of the subscription skip the lookup.
      if (query.offset === undefined || query.offset === "-1") await retrieveBatch(deps.engine.db, env.id, params.batchId);
      requireScope(principal, [`read:batch:${params.batchId}`, "read:runs"]);
      return serve(principal, { shape: { kind: "batch", batchId: params.batchId }, handle: `batch-${params.batchId}`, query, request, reply });
    },
  });
}
