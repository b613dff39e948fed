import type { FastifyInstance } from "fastify";
import { listQueues, overrideQueueLimit, resetQueueLimit, retrieveQueue, setQueuePaused, type QueueRef, type QueueState } from "@svc/runtime/engine";
import {
  ListQueuesQuery,
  ListQueuesResponse,
  OverrideQueueConcurrencyBody,
  PauseQueueBody,
  QUEUE_PAGE_DEFAULT,
  QUEUE_PAGE_MAX,
  QueueObject,
  QueueParams,
  ResetQueueConcurrencyBody,
  RetrieveQueueQuery,
} from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

/**
 * Queues on Trigger.dev's paths (engine/queues): list and retrieve, pause and resume, override the
 * concurrencyLimit and reset it. Secret key only, scoped to the key's environment.
 */
export function registerQueueRoutes(app: FastifyInstance, deps: AppDeps) {
  const auth = { allow: ["secretKey" as const] };
  const tags = ["queues"];
  const now = () => deps.engine.clock.now();

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/queues",
    operation: "queues.list",
    summary: "List the environment's queues by name (offset pages: page, perPage ≤ 100)",
    tags,
    auth,
    query: ListQueuesQuery,
    response: ListQueuesResponse,
    async handler({ query, principal }) {
      const env = environmentOf(principal);
      const page = query.page ?? 1;
      const perPage = Math.min(query.perPage ?? QUEUE_PAGE_DEFAULT, QUEUE_PAGE_MAX);
      const { queues, count } = await listQueues(deps.engine.db, env.id, page, perPage);
      return { data: queues.map(presentQueue), pagination: { currentPage: page, totalPages: Math.ceil(count / perPage), count } };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/queues/:value",
    operation: "queues.retrieve",
    summary: "Retrieve a queue by id (type=id, the default) or by task id (type=task) or name (type=custom)",
    tags,
    auth,
    params: QueueParams,
    query: RetrieveQueueQuery,
    response: QueueObject,
    async handler({ params, query, principal }) {
      const env = environmentOf(principal);
      return presentQueue(await retrieveQueue(deps.engine.db, env.id, queueRef(params.value, query.type)));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/queues/:value/pause",
    operation: "queues.pause",
    summary: "Pause a queue (no run of it starts; runs under way go on) or resume it",
    tags,
    auth,
    params: QueueParams,
    body: PauseQueueBody,
    response: QueueObject,
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      return presentQueue(await setQueuePaused(deps.engine, env.id, queueRef(params.value, body.type), body.action === "pause", now()));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/queues/:value/concurrency/override",
    operation: "queues.overrideConcurrencyLimit",
    summary: "Override a queue's concurrencyLimit until a reset (0 starts nothing)",
    tags,
    auth,
    params: QueueParams,
    body: OverrideQueueConcurrencyBody,
    response: QueueObject,
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      return presentQueue(await overrideQueueLimit(deps.engine, env.id, queueRef(params.value, body.type), body.concurrencyLimit, now(), null));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/queues/:value/concurrency/reset",
    operation: "queues.resetConcurrencyLimit",
    summary: "Drop a queue's concurrencyLimit override: the limit its tasks declare applies again",
    tags,
    auth,
    params: QueueParams,
    body: ResetQueueConcurrencyBody,
    response: QueueObject,
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      return presentQueue(await resetQueueLimit(deps.engine, env.id, queueRef(params.value, body.type), now()));
    },
  });
}

/** `{value}` as the SDK sends it (a `/` in a name arrives as `%2F`), read as `type` says. */
function queueRef(value: string, type: "id" | "task" | "custom" | undefined): QueueRef {
  const decoded = value.replace(/%2F/gi, "/");
  return type === undefined || type === "id" ? { id: decoded } : { type, name: decoded };
}

/** A queue as Trigger.dev's QueueItem. */
export function presentQueue(q: QueueState): QueueObject {
  const task = q.name.startsWith("task/");
  const current = q.limitOverride ?? q.declaredLimit;
  return {
    id: q.id,
    name: task ? q.name.slice("task/".length) : q.name,
    type: task ? "task" : "custom",
    version: "V1",
    running: q.running,
    queued: q.queued,
    paused: q.paused,
    concurrencyLimit: current,
    concurrency: {
      current,
      base: q.declaredLimit,
      override: q.limitOverride,
      overriddenAt: q.overriddenAt?.toISOString() ?? null,
      overriddenBy: q.overriddenBy,
    },
  };
}
