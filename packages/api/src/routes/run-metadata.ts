import type { FastifyInstance } from "fastify";
import { getRunMetadata, updateRunMetadata, type MetadataChange } from "@svc/runtime/engine";
import { MetadataResponse, RunIdParams, UpdateMetadataBody } from "@svc/runtime/contracts";
import { requireRunRead } from "../auth/run-access.ts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

/** A body's cap (Trigger.dev's: 2 MB); the metadata it leaves must still be at most 256 KiB. */
const METADATA_BODY_LIMIT = 2 * 1024 * 1024;

/** A run's metadata: `runs.updateMetadata` / the SDK's flush from task code (PUT), and its read (GET). */
export function registerRunMetadataRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/metadata",
    operation: "runs.getMetadata",
    summary: "Read a run's metadata ({} when it has none)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    response: MetadataResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      await requireRunRead(deps.engine.db, principal, env.id, params.runId);
      return { metadata: await getRunMetadata(deps.engine.db, env.id, params.runId) };
    },
  });

  defineRoute(app, deps, {
    method: "PUT",
    url: "/api/v1/runs/:runId/metadata",
    operation: "runs.updateMetadata",
    errors: [413, 422],
    summary:
      "Change a run's metadata: apply `operations` (set, delete, append, remove, increment, update) or replace it with `metadata`; `parentOperations`/`rootOperations` change its parent's and root run's. At most 256 KiB; a run that finished over an hour ago is refused (422)",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    body: UpdateMetadataBody,
    bodyLimit: METADATA_BODY_LIMIT,
    response: MetadataResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      const change: MetadataChange = { metadata: body.metadata, operations: body.operations, parentOperations: body.parentOperations, rootOperations: body.rootOperations };
      return { metadata: await updateRunMetadata(deps.engine, env.id, params.runId, change) };
    },
  });
}
