import {
  findProjectForUser,
  getBranchEnvironment,
  getRootEnvironment,
  listBranches,
  listProjectsForUser,
  NotFoundError,
  parseEnvironmentSlug,
  type DashboardSession,
  type Environment,
  type EnvironmentSlug,
  type ProjectSummary,
} from "@svc/runtime/engine";
import type { Queryable } from "@svc/runtime/db";

export const ENVIRONMENT_SLUGS: readonly EnvironmentSlug[] = ["dev", "staging", "prod", "preview"];

/** The project and environment a dashboard page shows (`/dashboard/{projectRef}/{env}/…?branch=`). */
export interface DashboardScope {
  project: ProjectSummary;
  slug: EnvironmentSlug;
  /** The preview branch shown, or null (the preview environment itself, or not preview). */
  branch: string | null;
  environment: Environment;
  /** Every project the user reaches, for the project switcher. */
  projects: ProjectSummary[];
  /** Live preview branch names (only loaded on preview). */
  branches: string[];
}

/**
 * Resolves a page's scope for the signed-in user: the API's auth matrix (a PAT's user reaches the
 * projects they are a member of, directly or through the organisation). A project the user cannot
 * reach is "not found", exactly like one that does not exist, so refs cannot be probed.
 */
export async function resolveScope(db: Queryable, session: DashboardSession, projectRef: string, env: string, branch: string | undefined): Promise<DashboardScope> {
  const slug = parseEnvironmentSlug(env);
  if (!slug || env !== slug) throw new NotFoundError("Environment not found");
  const project = await findProjectForUser(db, session.userId, projectRef);
  if (!project) throw new NotFoundError("Project not found");
  const root = await getRootEnvironment(db, projectRef, slug);
  if (!root) throw new NotFoundError("Environment not found");
  let environment = root;
  const wanted = slug === "preview" && branch ? branch : null;
  if (wanted) {
    const branchEnv = await getBranchEnvironment(db, root.id, wanted);
    if (!branchEnv) throw new NotFoundError("Branch not found");
    environment = branchEnv;
  }
  const [projects, branches] = await Promise.all([
    listProjectsForUser(db, session.userId),
    slug === "preview" ? listBranches(db, projectRef).then((list) => list.map((b) => b.name)) : Promise.resolve([]),
  ]);
  return { project, slug, branch: wanted, environment, projects, branches };
}

/** `/dashboard/{ref}/{env}/{path}` with the branch (and any extra query) kept. */
export function scopeHref(scope: Pick<DashboardScope, "project" | "slug" | "branch">, path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  if (scope.branch) params.set("branch", scope.branch);
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(key, value);
  const search = params.toString();
  return `/dashboard/${encodeURIComponent(scope.project.ref)}/${scope.slug}/${path}${search ? `?${search}` : ""}`;
}

/** A run's page in the dashboard. */
export function runHref(scope: DashboardScope, runId: string, query: Record<string, string> = {}): string {
  return scopeHref(scope, `runs/${encodeURIComponent(runId)}`, query);
}
