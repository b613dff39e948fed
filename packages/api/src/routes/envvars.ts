import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import {
  createEnvironmentVariable,
  deleteEnvironmentVariable,
  listEnvironmentVariables,
  parseEnvironmentSlug,
  retrieveEnvironmentVariable,
  updateEnvironmentVariable,
  uploadEnvironmentVariables,
  type Environment,
} from "@svc/runtime/engine";
import {
  CreateEnvironmentVariableRequestBody,
  EnvironmentVariableItem,
  EnvironmentVariableResponseBody,
  EnvVarEnvironmentParam,
  EnvVarNameParam,
  EnvVarWriteNameParam,
  ProjectRefParam,
  ImportEnvironmentVariablesRequestBody,
  ListEnvironmentVariablesResponse,
  UpdateEnvironmentVariableRequestBody,
} from "@svc/runtime/contracts";
import type { AuthRequirement } from "../auth/authenticate.ts";
import type { Principal } from "../auth/principal.ts";
import { resolveProjectEnvironment } from "../auth/project-access.ts";
import type { AppDeps } from "../deps.ts";
import { sendError } from "../http/errors.ts";
import { refuseOtherMethods } from "../http/method-not-allowed.ts";
import { defineRoute } from "../http/route.ts";

const BASE = "/api/v1/projects/:projectRef/envvars/:env";
/** Env vars accept a secret key of that very environment, or a PAT of a project member (README "Who may do what"). */
const auth: AuthRequirement = { allow: ["secretKey", "personalAccessToken"] };

const EnvParams = z.object({ projectRef: ProjectRefParam, env: EnvVarEnvironmentParam });
const NameParams = EnvParams.extend({ name: EnvVarNameParam });
const WriteNameParams = EnvParams.extend({ name: EnvVarWriteNameParam });

function target(deps: AppDeps, request: FastifyRequest, principal: Principal, params: z.infer<typeof EnvParams>): Promise<Environment> {
  // The enum already refused anything else; this only maps `stg` to `staging`.
  const slug = parseEnvironmentSlug(params.env)!;
  return resolveProjectEnvironment(deps, request, principal, params.projectRef, slug);
}

export function registerEnvVarRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, secrets, clock } = deps.engine;

  defineRoute(app, deps, {
    method: "GET",
    url: BASE,
    operation: "envvars.list",
    summary: "List environment variables (secret values redacted; a preview branch includes its parent's)",
    tags: ["envvars"],
    auth,
    params: EnvParams,
    response: ListEnvironmentVariablesResponse,
    async handler({ request, params, principal }) {
      return listEnvironmentVariables(db, secrets, await target(deps, request, principal, params));
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: BASE,
    operation: "envvars.create",
    summary: "Create an environment variable (replaces an existing value)",
    tags: ["envvars"],
    auth,
    params: EnvParams,
    body: CreateEnvironmentVariableRequestBody,
    response: EnvironmentVariableResponseBody,
    async handler({ request, params, body, principal }) {
      const env = await target(deps, request, principal, params);
      await createEnvironmentVariable(db, secrets, env, body, clock.now());
      return { success: true };
    },
  });

  defineRoute(app, deps, {
    method: "POST",
    url: `${BASE}/import`,
    operation: "envvars.upload",
    summary: "Upload many environment variables (override defaults to false)",
    tags: ["envvars"],
    auth,
    params: EnvParams,
    body: ImportEnvironmentVariablesRequestBody,
    response: EnvironmentVariableResponseBody,
    async handler({ request, reply, params, body, principal }) {
      const env = await target(deps, request, principal, params);
      // zod neither checks nor copies a "__proto__" key (assigning it would set the prototype):
      // take the names and values from the parsed JSON itself, whose keys are all own properties.
      const entries = Object.entries((request.body as { variables: Record<string, unknown> }).variables);
      const notText = entries.find(([, value]) => typeof value !== "string");
      if (notText) return sendError(reply, 400, `Invalid request body: variables.${notText[0]}: expected a string`);
      const variables = Object.fromEntries(entries) as Record<string, string>;
      const result = await uploadEnvironmentVariables(db, secrets, env, variables, body, clock.now());
      if (!result.ok) {
        return sendError(
          reply,
          400,
          `Some variables are already set in this environment: ${result.conflicts.join(", ")}. Set override to true to replace them.`,
          { variableErrors: result.conflicts.map((key) => ({ key, error: "Variable already set" })) },
        );
      }
      return { success: true };
    },
  });
  // `import` is the upload's path, not a variable's name: GET/PUT/DELETE there are 405, never
  // swallowed by the `:name` routes (Trigger.dev's static import route wins the same way).
  refuseOtherMethods(app, `${BASE}/import`, ["POST"]);

  defineRoute(app, deps, {
    method: "GET",
    url: `${BASE}/:name`,
    operation: "envvars.retrieve",
    summary: "Retrieve an environment variable",
    tags: ["envvars"],
    auth,
    params: NameParams,
    response: EnvironmentVariableItem,
    async handler({ request, params, principal }) {
      return retrieveEnvironmentVariable(db, secrets, await target(deps, request, principal, params), params.name);
    },
  });

  for (const method of ["PUT", "POST"] as const) {
    defineRoute(app, deps, {
      method,
      url: `${BASE}/:name`,
      operation: method === "PUT" ? "envvars.update" : "envvars.updateByPost",
      summary: method === "PUT" ? "Update an environment variable's value" : "Update an environment variable's value (POST alias of PUT)",
      tags: ["envvars"],
      auth,
      params: WriteNameParams,
      body: UpdateEnvironmentVariableRequestBody,
      response: EnvironmentVariableResponseBody,
      async handler({ request, params, body, principal }) {
        const env = await target(deps, request, principal, params);
        await updateEnvironmentVariable(db, secrets, env, params.name, body.value, clock.now());
        return { success: true };
      },
    });
  }

  defineRoute(app, deps, {
    method: "DELETE",
    url: `${BASE}/:name`,
    operation: "envvars.del",
    summary: "Delete an environment variable",
    tags: ["envvars"],
    auth,
    params: NameParams,
    response: EnvironmentVariableResponseBody,
    async handler({ request, params, principal }) {
      await deleteEnvironmentVariable(db, await target(deps, request, principal, params), params.name);
      return { success: true };
    },
  });
}
