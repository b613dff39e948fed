import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { getBranchEnvironment, getRootEnvironment, sanitizeBranchName, type Environment } from "./environments.ts";

export const MAX_BRANCH_NAME_LENGTH = 256;

/** A sanitised, valid branch name, or a ValidationError saying what is wrong with it. */
export function validateBranchName(raw: string): string {
  const name = sanitizeBranchName(raw);
  if (!name) throw new ValidationError("Branch name must not be empty");
  if (name.length > MAX_BRANCH_NAME_LENGTH) throw new ValidationError(`Branch name must be at most ${MAX_BRANCH_NAME_LENGTH} characters`);
  // Control characters and whitespace would make headers and logs ambiguous.
  if (/[\s\x00-\x1f\x7f]/.test(name)) throw new ValidationError(`Branch name "${name}" must not contain whitespace or control characters`);
  return name;
}

async function previewRoot(db: Queryable, projectRef: string): Promise<Environment> {
  const preview = await getRootEnvironment(db, projectRef, "preview");
  if (!preview) throw new NotFoundError(`Project ${projectRef} not found`);
  return preview;
}

/**
 * Creates a preview branch (a child environment of the project's preview environment). Creating a
 * branch that already exists returns it with `created: false`. Branches have no keys of their own:
 * the preview key plus a branch header (or a JWT whose `sub` is the branch) reaches them.
 */
export async function createBranch(db: Queryable, projectRef: string, rawName: string): Promise<{ environment: Environment; created: boolean }> {
  const name = validateBranchName(rawName);
  const preview = await previewRoot(db, projectRef);
  const inserted = await db.query<{ id: string }>(
    `INSERT INTO environments (id, project_id, slug, type, parent_environment_id, branch_name)
     VALUES ($1, $2, 'preview', 'PREVIEW', $3, $4)
     ON CONFLICT (parent_environment_id, branch_name) WHERE archived_at IS NULL DO NOTHING
     RETURNING id`,
    [newId.environment(), preview.projectId, preview.id, name],
  );
  const environment = await getBranchEnvironment(db, preview.id, name);
  if (!environment) throw new Error(`branch ${name} vanished while being created`);
  return { environment, created: inserted.rows.length > 0 };
}

export interface BranchSummary {
  environmentId: string;
  name: string;
  createdAt: Date;
  archivedAt: Date | null;
}

/** The branches of a project's preview environment, oldest first; archived ones only when asked. */
export async function listBranches(db: Queryable, projectRef: string, options: { includeArchived?: boolean } = {}): Promise<BranchSummary[]> {
  const preview = await previewRoot(db, projectRef);
  const { rows } = await db.query<BranchSummary>(
    `SELECT id AS "environmentId", branch_name AS name, created_at AS "createdAt", archived_at AS "archivedAt"
     FROM environments WHERE parent_environment_id = $1 ${options.includeArchived ? "" : "AND archived_at IS NULL"}
     ORDER BY created_at, id`,
    [preview.id],
  );
  return rows;
}

/**
 * Archives a live branch: its name becomes free again, requests naming it get "Branch not found"
 * and JWTs minted for it stop verifying. Returns `{ changed: false }` when no live branch has that name.
 */
export async function archiveBranch(db: Queryable, projectRef: string, rawName: string, now: Date): Promise<{ changed: boolean }> {
  const name = validateBranchName(rawName);
  const preview = await previewRoot(db, projectRef);
  const { rowCount } = await db.query(
    `UPDATE environments SET archived_at = $3 WHERE parent_environment_id = $1 AND branch_name = $2 AND archived_at IS NULL`,
    [preview.id, name, now],
  );
  return { changed: (rowCount ?? 0) > 0 };
}
