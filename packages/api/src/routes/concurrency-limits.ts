import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  keyOverrideExpiresAt,
  listConcurrencyLimits,
  overrideConcurrencyLimit,
  overrideConcurrencyLimitKey,
  resetConcurrencyLimit,
  resetConcurrencyLimitKey,
  retrieveConcurrencyLimit,
  retrieveConcurrencyLimitKey,
  setConcurrencyLimitPaused,
  type ConcurrencyLimitKeyState,
  type ConcurrencyLimitState,
} from "@svc/runtime/engine";
import {
  CONCURRENCY_LIMIT_PAGE_DEFAULT,
  CONCURRENCY_LIMIT_PAGE_MAX,
  ConcurrencyLimitKeyObject,
  ConcurrencyLimitObject,
  ConcurrencyLimitParams,
  ListConcurrencyLimitsQuery,
  ListConcurrencyLimitsResponse,
  OverrideConcurrencyLimitBody,
  PauseConcurrencyLimitBody,
  ResetConcurrencyLimitBody,
  RetrieveConcurrencyLimitQuery,
} from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

/**
 * Named concurrency limits on Trigger.dev's paths (engine/concurrency-limits): list and retrieve
 * (the limit, or one concurrencyKey's pool of it), override the bounds or one key's, pause and
 * resume, reset. Secret key only, scoped to the key's environment.
 */
export function registerConcurrencyLimitRoutes(app: FastifyInstance, deps: AppDeps) {
  const auth = { allow: ["secretKey" as const] };
  const tags = ["concurrency-limits"];
  const now = () => deps.engine.clock.now();

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/concurrency-limits",
    operation: "concurrencyLimits.list",
    summary: "List the environment's named concurrency limits by name (offset pages: page, perPage ≤ 100)",
    tags,
    auth,
    query: ListConcurrencyLimitsQuery,
    response: ListConcurrencyLimitsResponse,
    async handler({ query, principal }) {
      const env = environmentOf(principal);
      const page = query.page ?? 1;
      const perPage = Math.min(query.perPage ?? CONCURRENCY_LIMIT_PAGE_DEFAULT, CONCURRENCY_LIMIT_PAGE_MAX);
      const { limits, count } = await listConcurrencyLimits(deps.engine.db, env.id, page, perPage);
      return { data: limits.map(presentLimit), pagination: { currentPage: page, totalPages: Math.ceil(count / perPage), count } };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/concurrency-limits/:name",
    operation: "concurrencyLimits.retrieve",
    summary: "Retrieve a named concurrency limit, or with concurrencyKey that key's pool of it",
    tags,
    auth,
    params: ConcurrencyLimitParams,
    query: RetrieveConcurrencyLimitQuery,
    response: z.union([ConcurrencyLimitObject, ConcurrencyLimitKeyObject]),
    async handler({ params, query, principal }) {
      const env = environmentOf(principal);
      if (query.concurrencyKey !== undefined) {
        return presentKey(await retrieveConcurrencyLimitKey(deps.engine.db, env.id, params.name, query.concurrencyKey, now()));
      }
      return presentLimit(await retrieveConcurrencyLimit(deps.engine.db, env.id, params.name));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/concurrency-limits/:name/override",
    operation: "concurrencyLimits.override",
    summary: "Override a named limit's perKey and/or total until a reset (0 starts nothing), or with concurrencyKey one key's perKey until ttl",
    tags,
    auth,
    params: ConcurrencyLimitParams,
    body: OverrideConcurrencyLimitBody,
    response: z.union([ConcurrencyLimitObject, ConcurrencyLimitKeyObject]),
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      const at = now();
      if (body.concurrencyKey !== undefined) {
        const expiresAt = keyOverrideExpiresAt(body.ttl, at);
        return presentKey(await overrideConcurrencyLimitKey(deps.engine, env.id, params.name, body.concurrencyKey, body.perKey!, expiresAt, at));
      }
      return presentLimit(await overrideConcurrencyLimit(deps.engine, env.id, params.name, { perKey: body.perKey, total: body.total }, at));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/concurrency-limits/:name/pause",
    operation: "concurrencyLimits.pause",
    summary: "Pause a named limit (no run holding it starts; runs under way go on) or resume it",
    tags,
    auth,
    params: ConcurrencyLimitParams,
    body: PauseConcurrencyLimitBody,
    response: ConcurrencyLimitObject,
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      return presentLimit(await setConcurrencyLimitPaused(deps.engine, env.id, params.name, body.action === "pause", now()));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/concurrency-limits/:name/reset",
    operation: "concurrencyLimits.reset",
    summary: "Drop a named limit's override, or with concurrencyKey that key's override",
    tags,
    auth,
    params: ConcurrencyLimitParams,
    body: ResetConcurrencyLimitBody,
    response: z.union([ConcurrencyLimitObject, ConcurrencyLimitKeyObject]),
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      if (body.concurrencyKey !== undefined) {
        return presentKey(await resetConcurrencyLimitKey(deps.engine, env.id, params.name, body.concurrencyKey, now()));
      }
      return presentLimit(await resetConcurrencyLimit(deps.engine, env.id, params.name, now()));
    },
  });
}

/** A limit as Trigger.dev's ConcurrencyLimitItem. */
export function presentLimit(l: ConcurrencyLimitState): ConcurrencyLimitObject {
  const overriddenAt = l.overriddenAt?.toISOString() ?? null;
  return {
    id: l.id,
    name: l.name,
    perKey: { current: l.perKeyOverride ?? l.perKey, base: l.perKey, override: l.perKeyOverride, overriddenAt: l.perKeyOverride === null ? null : overriddenAt },
    total: { current: l.totalOverride ?? l.total, base: l.total, override: l.totalOverride, overriddenAt: l.totalOverride === null ? null : overriddenAt },
    running: l.running,
    queued: l.queued,
    paused: l.paused,
  };
}

/** One key's pool as Trigger.dev's ConcurrencyLimitKeyItem. */
function presentKey(k: ConcurrencyLimitKeyState): ConcurrencyLimitKeyObject {
  return {
    name: k.name,
    concurrencyKey: k.concurrencyKey,
    perKey: { current: k.keyOverride ?? k.perKey, base: k.perKey, override: k.keyOverride, expiresAt: k.expiresAt?.toISOString() ?? null },
    running: k.running,
    paused: k.paused,
  };
}
