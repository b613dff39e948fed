import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";

export interface ProjectSummary {
  id: string;
  ref: string;
  name: string;
  slug: string;
  organizationId: string;
  organizationSlug: string;
}

export async function findProjectByRef(db: Queryable, ref: string): Promise<ProjectSummary | null> {
  const { rows } = await db.query<ProjectSummary>(
    `SELECT p.id, p.ref, p.name, p.slug, p.organization_id AS "organizationId", o.slug AS "organizationSlug"
     FROM projects p JOIN organizations o ON o.id = p.organization_id WHERE p.ref = $1`,
    [ref],
  );
  return rows[0] ?? null;
}

export async function getProjectByRef(db: Queryable, ref: string): Promise<ProjectSummary> {
  const project = await findProjectByRef(db, ref);
  if (!project) throw new NotFoundError(`Project ${ref} not found`);
  return project;
}

/** Adds a user to a project; adding an existing member is a no-op (`added: false`). */
export async function addProjectMember(db: Queryable, projectId: string, userId: string): Promise<{ added: boolean }> {
  const { rowCount } = await db.query(
    `INSERT INTO project_members (project_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [projectId, userId],
  );
  return { added: (rowCount ?? 0) > 0 };
}

/** Adds a user to an organisation, which reaches every project of it. */
export async function addOrganizationMember(db: Queryable, organizationId: string, userId: string): Promise<{ added: boolean }> {
  const { rowCount } = await db.query(
    `INSERT INTO organization_members (organization_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [organizationId, userId],
  );
  return { added: (rowCount ?? 0) > 0 };
}

/**
 * The project a user reaches by ref: as a project member, or as a member of its organisation.
 * Null when the project does not exist or the user cannot reach it (callers answer both the
 * same way, so a PAT cannot probe which project refs exist).
 */
export async function findProjectForUser(db: Queryable, userId: string, projectRef: string): Promise<ProjectSummary | null> {
  const { rows } = await db.query<ProjectSummary>(
    `SELECT p.id, p.ref, p.name, p.slug, p.organization_id AS "organizationId", o.slug AS "organizationSlug"
     FROM projects p JOIN organizations o ON o.id = p.organization_id
     WHERE p.ref = $2
       AND (EXISTS (SELECT 1 FROM project_members pm WHERE pm.project_id = p.id AND pm.user_id = $1)
         OR EXISTS (SELECT 1 FROM organization_members om WHERE om.organization_id = p.organization_id AND om.user_id = $1))`,
    [userId, projectRef],
  );
  return rows[0] ?? null;
}

/** Every project a user reaches (as a project member or through its organisation), by organisation then name. */
export async function listProjectsForUser(db: Queryable, userId: string): Promise<ProjectSummary[]> {
  const { rows } = await db.query<ProjectSummary>(
    `SELECT p.id, p.ref, p.name, p.slug, p.organization_id AS "organizationId", o.slug AS "organizationSlug"
     FROM projects p JOIN organizations o ON o.id = p.organization_id
     WHERE EXISTS (SELECT 1 FROM project_members pm WHERE pm.project_id = p.id AND pm.user_id = $1)
        OR EXISTS (SELECT 1 FROM organization_members om WHERE om.organization_id = p.organization_id AND om.user_id = $1)
     ORDER BY o.slug, p.name, p.ref`,
    [userId],
  );
  return rows;
}

/** Every project, by organisation then name (the operator's view; users see listProjectsForUser). */
export async function listAllProjects(db: Queryable): Promise<ProjectSummary[]> {
  const { rows } = await db.query<ProjectSummary>(
    `SELECT p.id, p.ref, p.name, p.slug, p.organization_id AS "organizationId", o.slug AS "organizationSlug"
     FROM projects p JOIN organizations o ON o.id = p.organization_id ORDER BY o.slug, p.name, p.ref`,
  );
  return rows;
}
