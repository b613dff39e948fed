import { withTransaction } from "../../db/queryable.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { MAX_BULK_ACTION_RUN_IDS } from "../../contracts/bulk-actions.ts";
import type { EngineDeps } from "../deps.ts";
import { countRuns, type RunListFilters } from "../runs/list.ts";
import type { BulkActionType } from "./statuses.ts";
import { abortPendingBulkAction, getBulkAction, insertBulkAction, storedFilters, type BulkActionRow } from "./store.ts";

export { MAX_BULK_ACTION_RUN_IDS };

export interface NewBulkAction {
  action: BulkActionType;
  name?: string;
  /** The runs: those matching run list filters (resolved, as GET /api/v1/runs resolves them), or these ids. */
  selection: { filters: RunListFilters } | { runIds: string[] };
}

/**
 * Records a bulk action, PENDING, for the workers' timer loops to work through (due-bulk-actions.ts),
 * and wakes them. Its set of runs is fixed here: a filter's `createdTo` is moved back to just
 * before now, so that runs created later (its own replays among them) are never in it; `total`
 * counts the set's runs now. Statuses are read as each chunk reaches them, so a run that stopped
 * matching meanwhile (a QUEUED run that started) is left alone, and the action ends with fewer
 * handled than its total.
 */
export async function createBulkAction(deps: Pick<EngineDeps, "db" | "clock">, environmentId: string, input: NewBulkAction): Promise<BulkActionRow> {
  const now = deps.clock.now();
  let filters: RunListFilters | null = null;
  let runIds: string[] | null = null;
  let total: number;
  if ("filters" in input.selection) {
    const before = new Date(now.getTime() - 1);
    const given = input.selection.filters;
    filters = { ...given, createdTo: given.createdTo && given.createdTo.getTime() < before.getTime() ? given.createdTo : before };
    total = await countRuns(deps.db, [environmentId], filters);
  } else {
    runIds = [...new Set(input.selection.runIds)].sort();
    if (runIds.length === 0) throw new ValidationError("runIds: give at least one run id");
    if (runIds.length > MAX_BULK_ACTION_RUN_IDS) throw new ValidationError(`runIds: at most ${MAX_BULK_ACTION_RUN_IDS} run ids (got ${runIds.length}); use a filter for more`);
    total = runIds.length;
  }
  return withTransaction(deps.db, async (tx) => {
    const row = await insertBulkAction(tx, {
      id: newId.bulkAction(),
      environment_id: environmentId,
      name: input.name ?? null,
      action: input.action,
      filters: filters ? storedFilters(filters) : null,
      run_ids: runIds,
      total,
      created_at: now,
    });
    // The timer loops of the workers wake on it (worker/src/parts/channels.ts).
    await tx.query(`SELECT pg_notify('svc_timers', '')`);
    return row;
  });
}

export async function retrieveBulkAction(deps: Pick<EngineDeps, "db">, environmentId: string, id: string): Promise<BulkActionRow> {
  const row = await getBulkAction(deps.db, environmentId, id);
  if (!row) throw new NotFoundError("Bulk action not found");
  return row;
}

/**
 * Stops a PENDING bulk action before its next chunk (a chunk under way finishes first). A
 * COMPLETED or ABORTED one is refused with ConflictError (409), an unknown id with NotFoundError.
 */
export async function abortBulkAction(deps: Pick<EngineDeps, "db" | "clock">, environmentId: string, id: string): Promise<BulkActionRow> {
  const aborted = await abortPendingBulkAction(deps.db, environmentId, id, deps.clock.now());
  if (aborted) return aborted;
  const row = await getBulkAction(deps.db, environmentId, id);
  if (!row) throw new NotFoundError("Bulk action not found");
  throw new ConflictError(`Bulk action ${id} is already ${row.status}: only a PENDING bulk action can be aborted`);
}
