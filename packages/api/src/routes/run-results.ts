import type { FastifyInstance } from "fastify";
import { batchResults, runPacketUrl, runResult } from "@svc/runtime/engine";
import { BatchIdParams, BatchResultsResponse, PresignedUrlResponse, RunIdParams, RunPacketParams, RunResult } from "@svc/runtime/contracts";
import { requireRunRead } from "../auth/run-access.ts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";
import { presentRunResult } from "../presenters/run-result.ts";

/** What finished runs produced: a run's result, a batch's results, a stored payload's or output's download URL. */
export function registerRunResultRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/result",
    operation: "runs.result",
    summary: "A finished run's result: its output, or the error it ended with (404 while it has not finished)",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    response: RunResult,
    async handler({ principal, params }) {
      return presentRunResult(await runResult(deps.engine.db, environmentOf(principal).id, params.runId));
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/batches/:batchId/results",
    operation: "batches.results",
    summary: "The results of a batch's finished runs, in item order (runs still under way are left out)",
    tags: ["batches"],
    auth: { allow: ["secretKey"] },
    params: BatchIdParams,
    response: BatchResultsResponse,
    async handler({ principal, params }) {
      const { id, runs } = await batchResults(deps.engine.db, environmentOf(principal).id, params.batchId);
      return { id, items: runs.map(presentRunResult) };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/packets/:field",
    operation: "runs.packetUrl",
    summary: "A download URL for a run's payload or output stored as a packet (404 when it is inline): what a token that may read the run uses",
    tags: ["packets"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunPacketParams,
    response: PresignedUrlResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      await requireRunRead(deps.engine.db, principal, env.id, params.runId);
      const presignedUrl = await runPacketUrl({ db: deps.engine.db, apiUrl: deps.engine.apiUrl, now: deps.engine.clock.now() }, env.id, params.runId, params.field);
      return { presignedUrl };
    },
  });
}
