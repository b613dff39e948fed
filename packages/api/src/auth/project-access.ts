import type { FastifyRequest } from "fastify";
import {
  AuthenticationError,
  findProjectByRef,
  findProjectForUser,
  getBranchEnvironment,
  getRootEnvironment,
  NotFoundError,
  PermissionError,
  type Environment,
  type EnvironmentSlug,
  type ProjectSummary,
} from "@svc/runtime/engine";
import type { AppDeps } from "../deps.ts";
import { requestedBranch } from "./authenticate.ts";
import type { Principal } from "./principal.ts";

/**
 * The project named by a `{projectRef}` path segment, if the principal may act on it:
 * - a secret key reaches only its own project;
 * - a PAT reaches the projects its user is a member of (directly or through the organisation).
 * Anything else is 403. A project that does not exist is answered exactly like one the caller
 * cannot reach, so credentials cannot probe which refs exist.
 */
export async function authorizeProject(deps: AppDeps, principal: Principal, projectRef: string): Promise<ProjectSummary> {
  if (principal.kind === "secretKey") {
    if (principal.environment.projectRef !== projectRef) throw new PermissionError(`This secret key does not belong to project ${projectRef}`);
    const project = await findProjectByRef(deps.engine.db, projectRef);
    if (!project) throw new PermissionError(`This secret key does not belong to project ${projectRef}`);
    return project;
  }
  if (principal.kind === "personalAccessToken") {
    const project = await findProjectForUser(deps.engine.db, principal.userId, projectRef);
    if (!project) throw new PermissionError(`You do not have access to project ${projectRef}`);
    return project;
  }
  // Routes under /projects/{ref} never accept public tokens; authenticate() already refused them.
  throw new AuthenticationError("A public access token cannot be used for this request");
}

/**
 * The environment a project-scoped request (`/projects/{ref}/…/{env}`) acts on.
 * - Secret key: its own environment, which must be `{env}` of `{ref}` (else 403). A preview key
 *   already points at the branch named by the branch header (resolved while authenticating).
 * - PAT: the project's `{env}` environment; on `preview`, a branch header selects that branch
 *   (404 "Branch not found" when there is none). The header is ignored on dev, staging and prod.
 */
export async function resolveProjectEnvironment(
  deps: AppDeps,
  request: FastifyRequest,
  principal: Principal,
  projectRef: string,
  slug: EnvironmentSlug,
): Promise<Environment> {
  await authorizeProject(deps, principal, projectRef);
  if (principal.kind === "secretKey") {
    const env = principal.environment;
    if (env.slug !== slug) throw new PermissionError(`This secret key is for the ${env.slug} environment, not ${slug}`);
    return env;
  }
  const root = await getRootEnvironment(deps.engine.db, projectRef, slug);
  if (!root) throw new PermissionError(`You do not have access to project ${projectRef}`);
  const branch = slug === "preview" ? requestedBranch(request) : null;
  if (!branch) return root;
  const branchEnv = await getBranchEnvironment(deps.engine.db, root.id, branch);
  if (!branchEnv) throw new NotFoundError("Branch not found");
  return branchEnv;
}
