import type { FastifyInstance } from "fastify";
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  listTimezones,
  presentSchedule,
  setScheduleActivation,
  updateSchedule,
  type ScheduleRow,
} from "@svc/runtime/engine";
import {
  CreateScheduleBody,
  DeletedScheduleResponse,
  ListSchedulesQuery,
  ListSchedulesResponse,
  ScheduleObject,
  ScheduleParams,
  TimezonesQuery,
  TimezonesResponse,
  UpdateScheduleBody,
} from "@svc/runtime/contracts";
import type { AppDeps } from "../deps.ts";
import { environmentOf } from "../http/principal-guards.ts";
import { defineRoute } from "../http/route.ts";

/** Cron schedules on Trigger.dev's paths; secret key only, scoped to the key's environment. */
export function registerScheduleRoutes(app: FastifyInstance, deps: AppDeps) {
  const auth = { allow: ["secretKey" as const] };
  const tags = ["schedules"];
  const present = (row: ScheduleRow, env: Parameters<typeof presentSchedule>[1]) => presentSchedule(row, env, deps.engine.clock.now());

  defineRoute(app, deps, {
    method: "POST",
    url: "/api/v1/schedules",
    operation: "schedules.create",
    errors: [422],
    summary: "Create a schedule (upserts on deduplicationKey)",
    tags,
    auth,
    body: CreateScheduleBody,
    response: ScheduleObject,
    async handler({ body, principal }) {
      const env = environmentOf(principal);
      const { schedule } = await createSchedule(deps.engine, env, body);
      return present(schedule, env);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/schedules",
    operation: "schedules.list",
    summary: "List schedules (offset pages: page, perPage ≤ 100)",
    tags,
    auth,
    query: ListSchedulesQuery,
    response: ListSchedulesResponse,
    async handler({ query, principal }) {
      const env = environmentOf(principal);
      const page = await listSchedules(deps.engine, env, query);
      return {
        data: page.rows.map((row) => present(row, env)),
        pagination: { currentPage: page.currentPage, totalPages: page.totalPages, count: page.count },
      };
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/schedules/:id",
    operation: "schedules.retrieve",
    summary: "Retrieve a schedule by id or deduplicationKey",
    tags,
    auth,
    params: ScheduleParams,
    response: ScheduleObject,
    async handler({ params, principal }) {
      const env = environmentOf(principal);
      return present(await getSchedule(deps.engine, env, params.id), env);
    },
  });

  defineRoute(app, deps, {
    method: "PUT",
    url: "/api/v1/schedules/:id",
    operation: "schedules.update",
    errors: [422],
    summary: "Update a schedule (imperative only)",
    tags,
    auth,
    params: ScheduleParams,
    body: UpdateScheduleBody,
    response: ScheduleObject,
    async handler({ params, body, principal }) {
      const env = environmentOf(principal);
      return present(await updateSchedule(deps.engine, env, params.id, body), env);
    },
  });

  for (const action of ["activate", "deactivate"] as const) {
    defineRoute(app, deps, {
      method: "POST",
      url: `/api/v1/schedules/:id/${action}`,
      operation: `schedules.${action}`,
      // A DECLARATIVE schedule (declared in task code) cannot be switched from the API: 422.
      errors: [422],
      summary: `${action === "activate" ? "Activate" : "Deactivate"} a schedule (imperative only)`,
      tags,
      auth,
      params: ScheduleParams,
      response: ScheduleObject,
      async handler({ params, principal }) {
        const env = environmentOf(principal);
        return present(await setScheduleActivation(deps.engine, env, params.id, action === "activate"), env);
      },
    });
  }

  defineRoute(app, deps, {
    method: "DELETE",
    url: "/api/v1/schedules/:id",
    operation: "schedules.del",
    // A DECLARATIVE schedule is deleted by removing it from the task code: 422.
    errors: [422],
    summary: "Delete a schedule (imperative only)",
    tags,
    auth,
    params: ScheduleParams,
    response: DeletedScheduleResponse,
    async handler({ params, principal }) {
      return deleteSchedule(deps.engine, environmentOf(principal), params.id);
    },
  });

  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/timezones",
    operation: "schedules.timezones",
    summary: "IANA timezones a schedule may use (no auth)",
    tags,
    query: TimezonesQuery,
    response: TimezonesResponse,
    async handler({ query }) {
      return { timezones: listTimezones({ excludeUtc: query.excludeUtc === "true" }) };
    },
  });
}
