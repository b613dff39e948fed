import type { Queryable } from "../../db/queryable.ts";
import type { RunListFilters } from "../runs/list.ts";
import type { BulkActionStatus, BulkActionType } from "./statuses.ts";

/** A row of bulk_actions (migration 0045). */
export interface BulkActionRow {
  id: string;
  environment_id: string;
  name: string | null;
  action: BulkActionType;
  status: BulkActionStatus;
  /** The run list filters, as stored (dates as ISO text): filtersOf reads them back. Null for a list of ids. */
  filters: StoredFilters | null;
  /** The explicit run ids, sorted; null for a filter. */
  run_ids: string[] | null;
  cursor_created_at: Date | null;
  cursor_run_id: string | null;
  total: number;
  succeeded: number;
  failed: number;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** RunListFilters as JSON holds them: the dates as ISO text. */
export type StoredFilters = Omit<RunListFilters, "createdFrom" | "createdTo"> & { createdFrom?: string; createdTo?: string };

export function storedFilters(filters: RunListFilters): StoredFilters {
  const { createdFrom, createdTo, ...rest } = filters;
  return { ...rest, ...(createdFrom ? { createdFrom: createdFrom.toISOString() } : {}), ...(createdTo ? { createdTo: createdTo.toISOString() } : {}) };
}

export function filtersOf(stored: StoredFilters): RunListFilters {
  const { createdFrom, createdTo, ...rest } = stored;
  return { ...rest, ...(createdFrom ? { createdFrom: new Date(createdFrom) } : {}), ...(createdTo ? { createdTo: new Date(createdTo) } : {}) };
}

export async function insertBulkAction(
  db: Queryable,
  row: Pick<BulkActionRow, "id" | "environment_id" | "name" | "action" | "filters" | "run_ids" | "total" | "created_at">,
): Promise<BulkActionRow> {
  const { rows } = await db.query<BulkActionRow>(
    `INSERT INTO bulk_actions (id, environment_id, name, action, filters, run_ids, total, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING *`,
    [row.id, row.environment_id, row.name, row.action, row.filters === null ? null : JSON.stringify(row.filters), row.run_ids, row.total, row.created_at],
  );
  return rows[0]!;
}

export async function getBulkAction(db: Queryable, environmentId: string, id: string): Promise<BulkActionRow | null> {
  if (id.includes("\u0000")) return null; // from a URL: Postgres text cannot hold NUL
  const { rows } = await db.query<BulkActionRow>(`SELECT * FROM bulk_actions WHERE id = $1 AND environment_id = $2`, [id, environmentId]);
  return rows[0] ?? null;
}

/** One keyset page of an environment's bulk actions in (created_at, id) order, as the API's paginator asks for it. */
export async function listBulkActions(
  db: Queryable,
  environmentId: string,
  page: { keyset: { sql: string; values: unknown[] } | null; direction: "desc" | "asc"; limit: number },
): Promise<BulkActionRow[]> {
  const values: unknown[] = [environmentId];
  let keyset = "";
  if (page.keyset) {
    const offset = values.length;
    values.push(...page.keyset.values);
    keyset = ` AND ${page.keyset.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`)}`;
  }
  values.push(page.limit);
  const dir = page.direction === "desc" ? "DESC" : "ASC";
  const { rows } = await db.query<BulkActionRow>(
    `SELECT * FROM bulk_actions WHERE environment_id = $1${keyset} ORDER BY created_at ${dir}, id ${dir} LIMIT $${values.length}`,
    values,
  );
  return rows;
}

/**
 * PENDING → ABORTED, guarded. Waits for a chunk in progress to commit (it holds the row): the
 * chunk after it never starts. Null when the action is not PENDING (or not there).
 */
export async function abortPendingBulkAction(db: Queryable, environmentId: string, id: string, now: Date): Promise<BulkActionRow | null> {
  if (id.includes("\u0000")) return null;
  const { rows } = await db.query<BulkActionRow>(
    `UPDATE bulk_actions SET status = 'ABORTED', completed_at = $3, updated_at = $3
     WHERE id = $1 AND environment_id = $2 AND status = 'PENDING' RETURNING *`,
    [id, environmentId, now],
  );
  return rows[0] ?? null;
}
