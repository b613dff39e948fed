import type { FastifyInstance } from "fastify";
import { runTrace } from "@svc/runtime/engine";
import { MAX_TRACE_PAGE_SIZE, RunEventsResponse, RunIdParams, RunSpanDetailResponse, RunSpanParams, RunTraceAnswer, RunTracePageQuery } from "@svc/runtime/contracts";
import { requireRunRead } from "../auth/run-access.ts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { presentRunEvents, presentRunSpan, presentRunTrace, presentRunTracePage } from "../presenters/run-trace.ts";

/**
 * A run's trace, spans and events, drawn from what svc records of it (attempts, the steps and
 * waits of its ledger, the runs it triggered): engine/runs/run-trace.ts.
 */
export function registerRunTraceRoutes(app: FastifyInstance, deps: AppDeps) {
  const traceOf = async (principal: Parameters<typeof environmentOf>[0], runId: string) => {
    const env = environmentOf(principal);
    await requireRunRead(deps.engine.db, principal, env.id, runId);
    return runTrace(deps.engine.db, env.id, runId, deps.engine.clock.now());
  };

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/trace",
    operation: "runs.trace",
    summary: "A run's trace: the run's span, its attempts, and the steps, waits and runs triggered in each; as a tree, or flat pages when page[size] or page[after] is given",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    query: RunTracePageQuery,
    response: RunTraceAnswer,
    async handler({ principal, params, query }) {
      const trace = await traceOf(principal, params.runId);
      const paged = query["page[size]"] !== undefined || query["page[after]"] !== undefined;
      return paged ? presentRunTracePage(trace, query["page[size]"] ?? MAX_TRACE_PAGE_SIZE, query["page[after]"]) : presentRunTrace(trace);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/spans/:spanId",
    operation: "runs.span",
    summary: "One span of a run's trace, with its properties and events",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunSpanParams,
    response: RunSpanDetailResponse,
    async handler({ principal, params }) {
      return presentRunSpan(await traceOf(principal, params.runId), params.spanId);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/events",
    operation: "runs.events",
    summary: "A run's spans as a flat list of events, by start time (times in nanoseconds)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    response: RunEventsResponse,
    async handler({ principal, params }) {
      return presentRunEvents(await traceOf(principal, params.runId));
    },
  });
}
