import type { Queryable } from "../../db/queryable.ts";
import { ValidationError } from "../../errors.ts";

/** The retention period of finished runs when neither the environment nor the worker's RUN_RETENTION_DAYS says otherwise. */
export const DEFAULT_RUN_RETENTION_DAYS = 30;

/** The most days an environment may keep runs (about 100 years); 0 keeps them forever. */
export const MAX_RUN_RETENTION_DAYS = 36_500;

/**
 * An environment's retention as SQL, for `environments e` with its parent `parent` (LEFT JOIN)
 * and the worker's default as `default_days`: the environment's own setting, else its parent's (a
 * preview branch keeps runs like its preview environment), else the default. 0: forever.
 */
export function effectiveRetentionSql(defaultDays: string): string {
  return `coalesce(e.run_retention_days, parent.run_retention_days, ${defaultDays})`;
}

/** Checks a retention setting: whole days, 0 (forever) up to MAX_RUN_RETENTION_DAYS, or null (the default). */
export function validateRetentionDays(days: number | null): number | null {
  if (days === null) return null;
  if (!Number.isInteger(days) || days < 0 || days > MAX_RUN_RETENTION_DAYS) {
    throw new ValidationError(`retention: days must be a whole number from 0 (keep forever) to ${MAX_RUN_RETENTION_DAYS}`);
  }
  return days;
}

/**
 * Sets how many days the environment keeps finished runs (null: back to the default). Takes
 * effect at the environment's next sweep. Returns whether the environment exists.
 */
export async function setRunRetention(db: Queryable, environmentId: string, days: number | null): Promise<{ changed: boolean }> {
  const value = validateRetentionDays(days);
  const { rowCount } = await db.query(`UPDATE environments SET run_retention_days = $2 WHERE id = $1`, [environmentId, value]);
  return { changed: (rowCount ?? 0) > 0 };
}

/** One environment's retention setting and what its last sweep did, as the operator's CLI shows it. */
export interface EnvironmentRetention {
  environmentId: string;
  slug: string;
  branchName: string | null;
  archived: boolean;
  /** Its own setting; null: inherited (the parent's for a branch, else the worker's default). */
  days: number | null;
  /** The parent environment's setting (preview branches), which applies when `days` is null. */
  parentDays: number | null;
  sweptAt: Date | null;
  lastDeleted: Record<string, number> | null;
  deletedRuns: number;
}

/** The retention of every environment of a project (root environments first, then branches by name). */
export async function listRunRetention(db: Queryable, projectId: string): Promise<EnvironmentRetention[]> {
  const { rows } = await db.query<EnvironmentRetention>(
    `SELECT e.id AS "environmentId", e.slug, e.branch_name AS "branchName", e.archived_at IS NOT NULL AS archived,
            e.run_retention_days AS days, parent.run_retention_days AS "parentDays",
            s.swept_at AS "sweptAt", s.last_deleted AS "lastDeleted", coalesce(s.deleted_runs, 0) AS "deletedRuns"
       FROM environments e
       LEFT JOIN environments parent ON parent.id = e.parent_environment_id
       LEFT JOIN retention_sweeps s ON s.environment_id = e.id
      WHERE e.project_id = $1
      ORDER BY e.parent_environment_id IS NOT NULL, array_position(ARRAY['dev','staging','prod','preview'], e.slug), e.branch_name`,
    [projectId],
  );
  return rows;
}
