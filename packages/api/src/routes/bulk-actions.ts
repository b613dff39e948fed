import type { FastifyInstance } from "fastify";
import { abortBulkAction, createBulkAction, listBulkActions, retrieveBulkAction, ValidationError, type BulkActionRow } from "@svc/runtime/engine";
import { BulkActionIdParams, BulkActionIdResponse, BulkActionListResponse, BulkActionObject, CreateBulkActionBody, CreateBulkActionDocument } from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { CursorPageQuery, keysetPage } from "../http/pagination.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { resolveBulkActionFilter } from "./bulk-action-filter.ts";

/** Default page size of bulk action lists. */
const BULK_ACTION_PAGE_SIZE = 25;

export function presentBulkAction(row: BulkActionRow): BulkActionObject {
  return {
    id: row.id,
    ...(row.name !== null ? { name: row.name } : {}),
    type: row.action,
    status: row.status,
    counts: { total: row.total, success: row.succeeded, failure: row.failed },
    createdAt: row.created_at.toISOString(),
    ...(row.completed_at ? { completedAt: row.completed_at.toISOString() } : {}),
  };
}

/**
 * Bulk actions (Trigger.dev's runs.bulk.*): cancel or replay every run of a filter, or of a list
 * of ids, in the background (the workers' timer loops, a chunk per transaction:
 * engine/bulk-actions). Secret keys only, as replay.
 */
export function registerBulkActionRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/bulk-actions",
    operation: "bulkActions.create",
    summary:
      "Cancel or replay many runs in the background: those matching `filter` (the run list's filters; the last 7 days unless a period or from/to is given) " +
      "as of now, or those of `runIds`. Workers work through them a chunk at a time; read the progress with GET /api/v1/bulk-actions/{bulkActionId}",
    tags: ["bulk-actions"],
    auth: { allow: ["secretKey"] },
    body: CreateBulkActionBody,
    bodyDocument: CreateBulkActionDocument,
    response: BulkActionIdResponse,
    async handler({ principal, body }) {
      const env = environmentOf(principal);
      if ((body.filter === undefined) === (body.runIds === undefined)) throw new ValidationError("Exactly one of filter or runIds must be provided");
      const selection = body.filter !== undefined ? { filters: resolveBulkActionFilter(body.filter, deps.engine.clock.now()) } : { runIds: body.runIds! };
      const action = await createBulkAction(deps.engine, env.id, {
        action: body.action === "cancel" ? "CANCEL" : "REPLAY",
        ...(body.name !== undefined ? { name: body.name } : {}),
        selection,
      });
      return { id: action.id };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/bulk-actions",
    operation: "bulkActions.list",
    summary: "List the environment's bulk actions, newest first",
    tags: ["bulk-actions"],
    auth: { allow: ["secretKey"] },
    query: CursorPageQuery,
    response: BulkActionListResponse,
    async handler({ principal, query }) {
      const env = environmentOf(principal);
      return keysetPage(query, BULK_ACTION_PAGE_SIZE, (keyset, direction, limit) => listBulkActions(deps.engine.db, env.id, { keyset, direction, limit }), presentBulkAction);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/bulk-actions/:bulkActionId",
    operation: "bulkActions.retrieve",
    summary: "A bulk action's status and counts: PENDING while runs are left, then COMPLETED or ABORTED",
    tags: ["bulk-actions"],
    auth: { allow: ["secretKey"] },
    params: BulkActionIdParams,
    response: BulkActionObject,
    async handler({ principal, params }) {
      return presentBulkAction(await retrieveBulkAction(deps.engine, environmentOf(principal).id, params.bulkActionId));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/bulk-actions/:bulkActionId/abort",
    operation: "bulkActions.abort",
    errors: [409],
    summary: "Stop a PENDING bulk action before its next chunk (runs already handled stay so); a COMPLETED or ABORTED one is refused with 409",
    tags: ["bulk-actions"],
    auth: { allow: ["secretKey"] },
    params: BulkActionIdParams,
    response: BulkActionIdResponse,
    async handler({ principal, params }) {
      const action = await abortBulkAction(deps.engine, environmentOf(principal).id, params.bulkActionId);
      return { id: action.id };
    },
  });
}
