import type { FastifyInstance } from "fastify";
import { z } from "zod";
import {
  addRunTags,
  cancelRun,
  getRun,
  listRuns,
  PermissionError,
  replayRun,
  rescheduleRun,
  runLedger,
  resolveSessionIds,
  retrieveRun,
  type RunListFilters,
  type RunListRow,
  type RunWait,
  ValidationError,
  waitsOfRuns,
} from "@svc/runtime/engine";
import {
  AddRunTagsBody,
  AddRunTagsResponse,
  ReplayRunBody,
  RescheduleRunBody,
  RetrieveRunResponse,
  RunIdParams,
  RunIdResponse,
  RunLedgerResponse,
  RunListFilterQuery,
  RunListResponse,
  type RunListItem,
} from "@svc/runtime/contracts";
import { runReadScopes } from "../auth/run-access.ts";
import { requireScope } from "../auth/scopes.ts";
import type { Principal } from "../auth/principal.ts";
import type { AppDeps } from "../deps.ts";
import { formatZodError, sendError } from "../http/errors.ts";
import { CursorPageQuery, keysetPage, type Page } from "../http/pagination.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute, nonJsonMediaType, notAnObjectError } from "../http/route.ts";
import { presentRetrievedRun } from "../presenters/retrieved-run.ts";
import { presentRunListItem } from "../presenters/run-object.ts";
import { resolveRunListFilters } from "./run-list-filters.ts";

/** Default and maximum page sizes of run lists (Trigger.dev's: 25 and 100). */
export const RUN_LIST_PAGE_SIZE = 25;

export const RunListQuery = RunListFilterQuery.extend(CursorPageQuery.shape);
export type RunListQuery = z.infer<typeof RunListQuery>;

/**
 * One page of runs across `environmentIds`, filtered and paginated as `GET /api/v1/runs` does
 * (default window: the last 7 days). Shared with the PAT route `GET /api/v1/projects/{ref}/runs`.
 */
export async function runListPage(deps: AppDeps, environmentIds: string[], query: RunListQuery): Promise<Page<RunListItem>> {
  return runListPageOf(deps, environmentIds, query, {}, (row) => presentRunListItem(row, row.waits));
}

/** A run row of a list page with what it waits on. */
export type RunListPageRow = RunListRow & { waits: RunWait[] };

/**
 * The same page with the dashboard's extras: `search.idPrefix` (runs whose id starts with it, from
 * any time unless the query gives one) and its own presentation of the rows.
 */
export async function runListPageOf<T>(deps: AppDeps, environmentIds: string[], query: RunListQuery, search: { idPrefix?: string }, present: (row: RunListPageRow) => T): Promise<Page<T>> {
  const filters = await runListFiltersOf(deps, environmentIds, query, search);
  return keysetPage<RunListPageRow, T>(
    query,
    RUN_LIST_PAGE_SIZE,
    async (keyset, direction, limit) => withWaits(deps, await listRuns(deps.engine.db, environmentIds, filters, { keyset, direction, limit })),
    present,
  );
}

/** The run list's filters of a query (sessions resolved to their ids, the default window applied), as its page reads them. */
export async function runListFiltersOf(deps: AppDeps, environmentIds: string[], query: RunListFilterQuery, search: { idPrefix?: string } = {}): Promise<RunListFilters> {
  const sessions = query["filter[session]"];
  return resolveRunListFilters(
    {
      status: query["filter[status]"],
      taskIdentifier: query["filter[taskIdentifier]"],
      version: query["filter[version]"],
      tag: query["filter[tag]"],
      batch: query["filter[batch]"],
      schedule: query["filter[schedule]"],
      queue: query["filter[queue]"],
      isTest: query["filter[isTest]"],
      period: query["filter[createdAt][period]"],
      from: query["filter[createdAt][from]"],
      to: query["filter[createdAt][to]"],
      bulkAction: query["filter[bulkAction]"],
      ...(sessions?.length ? { sessionIds: await resolveSessionIds(deps.engine.db, environmentIds, sessions) } : {}),
      ...(search.idPrefix !== undefined ? { idPrefix: search.idPrefix } : {}),
    },
    deps.engine.clock.now(),
  );
}

/** The rows with what each waits on: one more statement, made only for a page with WAITING runs. */
async function withWaits(deps: AppDeps, rows: RunListRow[]): Promise<RunListPageRow[]> {
  const waits = await waitsOfRuns(deps.engine.db, rows.filter((row) => row.status === "WAITING").map((row) => row.id));
  return rows.map((row) => ({ ...row, waits: waits.get(row.id) ?? [] }));
}

/** A public JWT may list with `read:runs` / `read:tasks`, or `read:tasks:<id>` for every task filtered on. */
function requireListScope(principal: Principal, taskIdentifiers: string[] | undefined) {
  try {
    requireScope(principal, ["read:runs", "read:tasks"]);
  } catch (error) {
    if (!(error instanceof PermissionError) || !taskIdentifiers?.length) throw error;
    for (const task of taskIdentifiers) requireScope(principal, [`read:tasks:${task}`]);
  }
}

export function registerRunRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs",
    operation: "runs.list",
    summary: "List runs of the environment (newest first; the last 7 days unless a period or from/to is given)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    query: RunListQuery,
    response: RunListResponse,
    async handler({ principal, query }) {
      const env = environmentOf(principal);
      requireListScope(principal, query["filter[taskIdentifier]"]);
      return runListPage(deps, [env.id], query);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v3/runs/:runId",
    operation: "runs.retrieve",
    summary: "Retrieve a run with its payload, output, error and related runs",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    response: RetrieveRunResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      const run = presentRetrievedRun(await retrieveRun(deps.engine, env.id, params.runId));
      requireScope(principal, runReadScopes(run));
      return run;
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v2/runs/:runId/cancel",
    operation: "runs.cancel",
    errors: [409],
    summary: "Cancel a run and its unfinished child runs (a finished run is left as it is)",
    tags: ["runs"],
    auth: { allow: ["secretKey", "publicJwt"] },
    params: RunIdParams,
    response: RunIdResponse,
    async handler({ principal, params }) {
      const env = environmentOf(principal);
      if (principal.kind === "publicJwt") {
        const run = await getRun(deps.engine.db, params.runId, env.id);
        requireScope(principal, [`write:runs:${params.runId}`, ...(run ? [`write:tasks:${run.task_identifier}`] : []), "write:runs"]);
      }
      const result = await cancelRun(deps.engine, env.id, params.runId);
      if (result.canceledRunIds.length > 0) deps.metrics?.runsFinished.inc({ status: "CANCELED" }, result.canceledRunIds.length);
      return { id: result.id };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/runs/:runId/replay",
    operation: "runs.replay",
    errors: [415, 422],
    documentedBody: {
      mediaType: "application/json",
      schema: ReplayRunBody,
      required: false,
      description: "Optional overrides of the original run's fields; `from: \"failure\"` (svc's extension) resumes a failed run from its failure",
    },
    summary:
      "Trigger a new run with the same task, payload, queue, tags and metadata (an optional JSON body overrides fields). " +
      "With `from: \"failure\"` (svc only) the new run resumes a FAILED, CRASHED, SYSTEM_FAILURE or TIMED_OUT run from where it failed, " +
      "replaying its recorded steps, completed waits and child results; a run of another status is refused with 422",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    response: RunIdResponse,
    async handler({ principal, params, request, reply }) {
      const env = environmentOf(principal);
      // The body is optional (older SDKs send none), so it is parsed here rather than by defineRoute.
      const mediaType = nonJsonMediaType(request);
      const raw = request.body;
      if (mediaType !== null && raw!.toString().trim().length > 0) {
        return sendError(reply, 415, `Content-Type must be application/json (got ${mediaType})`);
      }
      const given = mediaType === null ? (raw ?? {}) : {};
      const notAnObject = notAnObjectError(given);
      if (notAnObject !== null) return sendError(reply, 400, notAnObject);
      const overrides = ReplayRunBody.safeParse(given);
      if (!overrides.success) throw new ValidationError(`Invalid request body: ${formatZodError(overrides.error)}`);
      const result = await replayRun(deps.engine, env, params.runId, overrides.data);
      if (!result.isCached) deps.metrics?.runsTriggered.inc();
      return { id: result.id };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/runs/:runId/ledger",
    operation: "runs.ledger",
    summary: "A run's ledger as a replay of its current (or last) attempt reads it: its recorded steps and waits, oldest first (svc only; `svc runs replay --local` replays it)",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    response: RunLedgerResponse,
    async handler({ principal, params }) {
      return runLedger(deps.engine.db, environmentOf(principal).id, params.runId);
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/runs/:runId/reschedule",
    operation: "runs.reschedule",
    summary: "Move a DELAYED run's due time: a new delay from now, or a date (a run of any other status is refused with 400)",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    body: RescheduleRunBody,
    response: RetrieveRunResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      await rescheduleRun(deps.engine, env.id, params.runId, body.delay);
      return presentRetrievedRun(await retrieveRun(deps.engine, env.id, params.runId));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/runs/:runId/tags",
    operation: "runs.addTags",
    errors: [422],
    summary: "Add tags to a run (at most 10 per run, each at most 128 characters; those it has are skipped)",
    tags: ["runs"],
    auth: { allow: ["secretKey"] },
    params: RunIdParams,
    body: AddRunTagsBody,
    response: AddRunTagsResponse,
    async handler({ principal, params, body }) {
      const env = environmentOf(principal);
      const added = await addRunTags(deps.engine, env.id, params.runId, typeof body.tags === "string" ? [body.tags] : body.tags);
      return { message: added.length === 0 ? "No new tags to add" : `Successfully set ${added.length} new tags.` };
    },
  });
}
