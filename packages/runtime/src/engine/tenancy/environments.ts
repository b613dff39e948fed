import type { Queryable } from "../../db/queryable.ts";

export const ENVIRONMENT_SLUGS = ["dev", "staging", "prod", "preview"] as const;
export type EnvironmentSlug = (typeof ENVIRONMENT_SLUGS)[number];

export const ENVIRONMENT_TYPES: Record<EnvironmentSlug, string> = {
  dev: "DEVELOPMENT",
  staging: "STAGING",
  prod: "PRODUCTION",
  preview: "PREVIEW",
};

/** Secret-key prefixes per environment: the key says which environment it opens. */
export const KEY_PREFIXES: Record<EnvironmentSlug, string> = {
  dev: "svc_dev_",
  staging: "svc_stg_",
  prod: "svc_prod_",
  preview: "svc_preview_",
};

export interface Environment {
  id: string;
  projectId: string;
  projectRef: string;
  organizationId: string;
  slug: EnvironmentSlug;
  type: string;
  parentEnvironmentId: string | null;
  branchName: string | null;
}

/** The columns of an Environment, from `environments e JOIN projects p` (see SELECT_ENV). */
export const ENV_COLUMNS = `e.id, e.project_id AS "projectId", p.ref AS "projectRef", p.organization_id AS "organizationId",
         e.slug, e.type, e.parent_environment_id AS "parentEnvironmentId", e.branch_name AS "branchName"`;

/** Selects an Environment (joined with its project); callers add the WHERE. */
export const SELECT_ENV = `
  SELECT ${ENV_COLUMNS}
  FROM environments e JOIN projects p ON p.id = e.project_id`;

export async function getEnvironment(db: Queryable, id: string): Promise<Environment | null> {
  const { rows } = await db.query<Environment>(`${SELECT_ENV} WHERE e.id = $1`, [id]);
  return rows[0] ?? null;
}

/** Like getEnvironment, but an archived preview branch counts as gone (its JWTs stop working). */
export async function getLiveEnvironment(db: Queryable, id: string): Promise<Environment | null> {
  if (id.includes("\u0000")) return null; // from a JWT `sub`: Postgres text cannot hold NUL
  const { rows } = await db.query<Environment>(`${SELECT_ENV} WHERE e.id = $1 AND e.archived_at IS NULL`, [id]);
  return rows[0] ?? null;
}

/**
 * The environment slug of a path segment: `dev`, `staging` (or Trigger.dev's `stg`), `prod`,
 * `preview`. Null for anything else.
 */
export function parseEnvironmentSlug(value: string): EnvironmentSlug | null {
  if (value === "stg") return "staging";
  return (ENVIRONMENT_SLUGS as readonly string[]).includes(value) ? (value as EnvironmentSlug) : null;
}

/** The root environment of a project by slug (no branch). */
export async function getRootEnvironment(db: Queryable, projectRef: string, slug: EnvironmentSlug): Promise<Environment | null> {
  const { rows } = await db.query<Environment>(
    `${SELECT_ENV} WHERE p.ref = $1 AND e.slug = $2 AND e.parent_environment_id IS NULL`,
    [projectRef, slug],
  );
  return rows[0] ?? null;
}

/** A live preview branch of a preview environment. */
export async function getBranchEnvironment(db: Queryable, parentId: string, branchName: string): Promise<Environment | null> {
  if (branchName.includes("\u0000")) return null; // from a request header: no such branch can exist
  const { rows } = await db.query<Environment>(
    `${SELECT_ENV} WHERE e.parent_environment_id = $1 AND e.branch_name = $2 AND e.archived_at IS NULL`,
    [parentId, branchName],
  );
  return rows[0] ?? null;
}

/** Branch names as git tools send them: `refs/heads/feat-a` → `feat-a`. Null when empty. */
export function sanitizeBranchName(raw: string | undefined | null): string | null {
  if (!raw) return null;
  const name = raw
    .trim()
    .replace(/^refs\/heads\//, "")
    .replace(/^refs\/remotes\/[^/]+\//, "")
    .replace(/^origin\//, "");
  return name.length > 0 ? name : null;
}
