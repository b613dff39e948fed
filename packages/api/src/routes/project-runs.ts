import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { parseEnvironmentSlug, ValidationError, type EnvironmentSlug } from "@svc/runtime/engine";
import { ProjectRefParam, RunListResponse } from "@svc/runtime/contracts";
import { resolveProjectEnvironment } from "../auth/project-access.ts";
import type { AppDeps } from "../deps.ts";
import { defineRoute } from "../http/route.ts";
import { RunListQuery, runListPage } from "./runs.ts";

const ProjectRunListQuery = RunListQuery.extend({
  /** Comma-separated environment slugs: `dev`, `staging` (or `stg`), `prod`, `preview`; repeats add up. */
  "filter[env]": z.union([z.string(), z.array(z.string())]).optional().transform((v) => (Array.isArray(v) ? v.join(",") : v)),
});

/** `filter[env]=dev,prod` → ["dev", "prod"]; missing or unknown slugs are a 400 (Trigger.dev answers 500). */
function parseEnvFilter(value: string | undefined): EnvironmentSlug[] {
  const parts = (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0) throw new ValidationError("filter[env] is required: a comma-separated list of environments (dev, staging, prod, preview)");
  const slugs = parts.map((part) => {
    const slug = parseEnvironmentSlug(part);
    if (!slug) throw new ValidationError(`filter[env]: "${part}" is not an environment (dev, staging, prod, preview)`);
    return slug;
  });
  return [...new Set(slugs)];
}

export function registerProjectRunRoutes(app: FastifyInstance, deps: AppDeps) {
  defineRoute(app, deps, {
    method: "GET",
    url: "/api/v1/projects/:projectRef/runs",
    operation: "runs.listForProject",
    summary: "List runs of a project's environments with a personal access token (filter[env] required)",
    tags: ["runs"],
    // runs.list with a PAT (a project member, see README "Who may do what"): the project comes from the path, the environments from filter[env].
    auth: { allow: ["personalAccessToken"] },
    params: z.object({ projectRef: ProjectRefParam }),
    query: ProjectRunListQuery,
    response: RunListResponse,
    async handler({ request, principal, params, query }) {
      const slugs = parseEnvFilter(query["filter[env]"]);
      const environmentIds: string[] = [];
      // On preview a branch header selects that branch, as for env vars.
      for (const slug of slugs) environmentIds.push((await resolveProjectEnvironment(deps, request, principal, params.projectRef, slug)).id);
      return runListPage(deps, environmentIds, query);
    },
  });
}
