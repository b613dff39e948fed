import type { FastifyInstance } from "fastify";
import { addBatchItems, createBatch, parseBatchItemLines, retrieveBatch, triggerBatch, ValidationError } from "@svc/runtime/engine";
import {
  BatchIdParams,
  BatchItem,
  BatchItemsResponse,
  BatchTriggerV2Body,
  BatchTriggerV2Response,
  CreateBatchBody,
  CreateBatchResponse,
  RetrieveBatchResponse,
} from "@svc/runtime/contracts";
import type { Principal } from "../auth/principal.ts";
import { requireScope } from "../auth/scopes.ts";
import type { AppDeps } from "../deps.ts";
import { sendError } from "../http/errors.ts";
import { attachPublicToken } from "../http/jwt-headers.ts";
import { environmentOf, oneTimeUseOf } from "../http/principal-guards.ts";
import { traceOf } from "../http/request-spans.ts";
import { defineRoute } from "../http/route.ts";

/** Item streams carry up to 1000 items; large payloads were offloaded to packets by the SDK. */
export const BATCH_ITEMS_BODY_LIMIT = 64 * 1024 * 1024;

/** A public JWT needs `batchTrigger:tasks:<id>` for every task of the batch (or a type-level scope). */
function requireBatchTriggerScope(principal: Principal, tasks: string[] | undefined) {
  if (!tasks || tasks.length === 0) return requireScope(principal, ["batchTrigger:tasks", "batchTrigger:batch"]);
  for (const task of new Set(tasks)) requireScope(principal, [`batchTrigger:tasks:${task}`]);
}

export function registerBatchRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v3/batches",
    operation: "batches.create",
    status: 202,
    errors: [422],
    summary: "Create a batch of runCount runs whose items are sent next (phase 1 of a streamed batch trigger)",
    tags: ["batches"],
    auth: { allow: ["secretKey", "publicJwt"] },
    body: CreateBatchBody,
    response: CreateBatchResponse,
    async handler({ principal, body, reply }) {
      const env = environmentOf(principal);
      requireBatchTriggerScope(principal, body.taskIdentifiers);
      const { batch, isCached } = await createBatch(deps.engine, env, body, oneTimeUseOf(principal));
      await attachPublicToken(deps, reply, env, [`read:batch:${batch.id}`]);
      reply.status(202);
      const key = batch.idempotency_key_user ?? batch.idempotency_key;
      return { id: batch.id, runCount: batch.run_count, isCached, ...(key ? { idempotencyKey: key } : {}) };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v3/batches/:batchId/items",
    operation: "batches.streamItems",
    errors: [409, 415, 422],
    documentedBody: { mediaType: "application/x-ndjson", schema: BatchItem, required: true, description: "One JSON item per line (the schema is one line's)" },
    summary: "Stream a batch's items as NDJSON, one {index, task, payload?, options?} per line (idempotent by index)",
    tags: ["batches"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: BatchIdParams,
    response: BatchItemsResponse,
    bodyLimit: BATCH_ITEMS_BODY_LIMIT,
    async handler({ principal, params, request, reply }) {
      const env = environmentOf(principal);
      const contentType = String(request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (contentType !== "application/x-ndjson") {
        return sendError(reply, 415, `Content-Type must be application/x-ndjson (got ${contentType || "none"})`);
      }
      if (typeof request.body !== "string" || request.body.trim().length === 0) throw new ValidationError("Request body is empty: send one JSON item per line");
      const items = parseBatchItemLines(request.body);
      requireBatchTriggerScope(principal, items.map((item) => item.task));
      // Traces on: the items' runs are children of this request's span.
      const result = await addBatchItems(deps.engine, env, params.batchId, items, traceOf(request));
      deps.metrics?.runsTriggered.inc(result.runsCreated);
      return {
        id: result.id,
        itemsAccepted: result.itemsAccepted,
        itemsDeduplicated: result.itemsDeduplicated,
        sealed: result.sealed,
        enqueuedCount: result.enqueuedCount,
        expectedCount: result.expectedCount,
      };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v2/tasks/batch",
    operation: "tasks.batchTrigger",
    status: 202,
    errors: [422],
    summary: "Trigger a batch of up to 500 runs in one call",
    tags: ["batches"],
    auth: { allow: ["secretKey", "publicJwt"] },
    body: BatchTriggerV2Body,
    response: BatchTriggerV2Response,
    async handler({ principal, body, reply, request }) {
      const env = environmentOf(principal);
      requireBatchTriggerScope(principal, body.items.map((item) => item.task));
      const { runsCreated, ...result } = await triggerBatch(deps.engine, env, body, { ...oneTimeUseOf(principal), ...traceOf(request) });
      deps.metrics?.runsTriggered.inc(runsCreated);
      await attachPublicToken(deps, reply, env, [`read:batch:${result.id}`]);
      reply.status(202);
      return result;
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v2/batches/:batchId",
    operation: "batches.retrieve",
    summary: "Retrieve a batch: its status and run ids",
    tags: ["batches"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: BatchIdParams,
    response: RetrieveBatchResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const batch = await retrieveBatch(deps.engine.db, env.id, params.batchId);
      requireScope(principal, [`read:batch:${batch.id}`, "read:runs"]);
      return batch;
    },
  });
}
