import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { TriggerGroupCommitter, ValidationError } from "@svc/runtime/engine";
import { IdempotencyKey, storedText, TriggerTaskRequestBody, TriggerTaskResponse } from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { attachPublicToken } from "../http/jwt-headers.ts";
import { environmentOf, oneTimeUseOf } from "../http/principal-guards.ts";
import { requireScope } from "../auth/scopes.ts";
import { formatZodError } from "../http/errors.ts";
import { defineRoute } from "../http/route.ts";
import { traceOf } from "../http/request-spans.ts";

export function registerTaskRoutes(app: FastifyInstance, deps: AppDeps) {
  // Concurrent triggers of one environment share a transaction (group commit).
  const triggers = new TriggerGroupCommitter(deps.engine);
  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/tasks/:taskId/trigger",
    operation: "tasks.trigger",
    errors: [422],
    summary: "Trigger a task run",
    tags: ["tasks"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: z.object({ taskId: storedText(z.string().min(1).max(128)) }),
    body: TriggerTaskRequestBody,
    response: TriggerTaskResponse,
    async handler({ params, body, principal, reply, request }) {
      const env = environmentOf(principal);
      requireScope(principal, [`trigger:tasks:${params.taskId}`]);
      const options = { ...body.options };
      // Trigger.dev lets headers carry the idempotency key; they win over the body.
      const headerKey = request.headers["idempotency-key"];
      if (typeof headerKey === "string" && headerKey) {
        const key = IdempotencyKey.safeParse(headerKey);
        if (!key.success) throw new ValidationError(`Idempotency-Key header: ${formatZodError(key.error)}`);
        options.idempotencyKey = key.data;
      }
      const headerTtl = request.headers["idempotency-key-ttl"];
      if (typeof headerTtl === "string" && headerTtl) options.idempotencyKeyTTL = headerTtl;
      // Traces on: the run's attempts are children of this request's span.
      const result = await triggers.trigger(env, params.taskId, body.payload, options, { ...oneTimeUseOf(principal), ...traceOf(request) });
      if (!result.isCached) deps.metrics?.runsTriggered.inc();
      // As Trigger.dev's: the run's reader may also send to its input streams (streams.input().send).
      await attachPublicToken(deps, reply, env, [`read:runs:${result.id}`, `write:inputStreams:${result.id}`]);
      return { id: result.id, isCached: result.isCached };
    },
  });
}
