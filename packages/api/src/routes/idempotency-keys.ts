import type { FastifyInstance } from "fastify";
import { resetIdempotencyKey } from "@svc/runtime/engine";
import { ResetIdempotencyKeyBody, ResetIdempotencyKeyParams, ResetIdempotencyKeyResponse } from "@svc/runtime/contracts";
import { requireScope } from "../auth/scopes.ts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

export function registerIdempotencyKeyRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/idempotencyKeys/:key/reset",
    operation: "idempotencyKeys.reset",
    summary: "Free a task's idempotency key: the next trigger with it makes a new run (404 when no run holds it)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: ResetIdempotencyKeyParams,
    body: ResetIdempotencyKeyBody,
    response: ResetIdempotencyKeyResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      requireScope(principal, [`write:tasks:${body.taskIdentifier}`, "write:runs"]);
      await resetIdempotencyKey(deps.engine.db, env.id, body.taskIdentifier, params.key, deps.engine.clock.now());
      return { id: params.key };
    },
  });
}
