import type { Queryable } from "../../db/queryable.ts";
import { newId } from "../../ids.ts";
import { ENVIRONMENT_SLUGS, ENVIRONMENT_TYPES, type EnvironmentSlug } from "./environments.ts";
import type { SecretBox } from "./secret-box.ts";
import { activeSecretKeys, issueSecretKey } from "./secret-keys.ts";

export interface ProjectCredentials {
  projectRef: string;
  environments: Record<EnvironmentSlug, { id: string; secretKey: string }>;
}

export async function ensureOrganization(db: Queryable, slug: string, name = slug): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO organizations (id, slug, name) VALUES ($1, $2, $3)
     ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id`,
    [newId.organization(), slug, name],
  );
  return rows[0]!.id;
}

/** Creates a project with its four environments and one secret key each. */
export async function createProject(
  db: Queryable,
  box: SecretBox,
  input: { organizationId: string; name: string; slug: string; ref?: string },
): Promise<ProjectCredentials> {
  const projectId = newId.project();
  const ref = input.ref ?? projectId;
  await db.query(`INSERT INTO projects (id, ref, organization_id, name, slug) VALUES ($1, $2, $3, $4, $5)`, [
    projectId,
    ref,
    input.organizationId,
    input.name,
    input.slug,
  ]);
  const environments = {} as ProjectCredentials["environments"];
  for (const slug of ENVIRONMENT_SLUGS) {
    const id = newId.environment();
    await db.query(`INSERT INTO environments (id, project_id, slug, type) VALUES ($1, $2, $3, $4)`, [
      id,
      projectId,
      slug,
      ENVIRONMENT_TYPES[slug],
    ]);
    environments[slug] = { id, secretKey: await issueSecretKey(db, box, { id, slug }) };
  }
  return { projectRef: ref, environments };
}

/** A project's environments with their newest secret key, for `svc init` and key display. */
export async function projectCredentials(db: Queryable, box: SecretBox, projectRef: string, now: Date): Promise<ProjectCredentials | null> {
  const { rows } = await db.query<{ id: string; slug: EnvironmentSlug }>(
    `SELECT e.id, e.slug FROM environments e JOIN projects p ON p.id = e.project_id
     WHERE p.ref = $1 AND e.parent_environment_id IS NULL`,
    [projectRef],
  );
  if (rows.length === 0) return null;
  const environments = {} as ProjectCredentials["environments"];
  for (const row of rows) {
    const [secretKey] = await activeSecretKeys(db, box, row.id, now);
    environments[row.slug] = { id: row.id, secretKey: secretKey ?? "" };
  }
  return { projectRef, environments };
}

export const DEFAULT_ORGANIZATION = "default";
export const DEFAULT_PROJECT_SLUG = "default";

/**
 * Creates the default organisation and project on first start; later calls return the existing one.
 * Serialised with an advisory lock so concurrent first starts create exactly one.
 */
export async function ensureDefaultProject(db: Queryable, box: SecretBox, now: Date): Promise<ProjectCredentials> {
  await db.query("SELECT pg_advisory_xact_lock(7246002)");
  const existing = await db.query<{ ref: string }>(
    `SELECT p.ref FROM projects p JOIN organizations o ON o.id = p.organization_id
     WHERE o.slug = $1 AND p.slug = $2`,
    [DEFAULT_ORGANIZATION, DEFAULT_PROJECT_SLUG],
  );
  if (existing.rows[0]) return (await projectCredentials(db, box, existing.rows[0].ref, now))!;
  const organizationId = await ensureOrganization(db, DEFAULT_ORGANIZATION, "Default organisation");
  return createProject(db, box, { organizationId, name: "Default project", slug: DEFAULT_PROJECT_SLUG });
}
