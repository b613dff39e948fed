import { isRealCalendarDate, isRunStatus, LEGACY_RUN_STATUSES, MAX_DURATION_MS, parseDuration, RUN_STATUSES, storableDate, ValidationError, type RunListFilters, type RunStatus } from "@svc/runtime/engine";

/** What a bulk action id looks like (ids.ts: `bulk_` and a time-ordered base-36 id). */
const BULK_ACTION_ID = /^bulk_[0-9a-z]{1,64}$/;

/** Without a period or from/to, run lists cover the last 7 days (as Trigger.dev's do). */
export const DEFAULT_RUN_LIST_WINDOW_MS = 7 * 86_400_000;

/** Filters as they arrive on the query string (lists already split on commas). */
export interface RunListQueryFilters {
  status?: string[];
  taskIdentifier?: string[];
  version?: string[];
  tag?: string[];
  batch?: string[];
  schedule?: string[];
  queue?: string[];
  isTest?: "true" | "false" | boolean;
  /** Session ids (already resolved from ids or externalIds): the runs they started, from any time. */
  sessionIds?: string[];
  /** Bulk action ids: the runs they touched, from any time (as the action reached them). */
  bulkAction?: string[];
  /** A run id prefix (the dashboard's search; not a query parameter of the API): from any time, as ids are. */
  idPrefix?: string;
  period?: string;
  from?: string;
  to?: string;
}

function parseInstant(value: string, param: string): Date {
  const trimmed = value.trim();
  const date = /^\d+$/.test(trimmed) ? new Date(Number(trimmed)) : new Date(trimmed);
  if (Number.isNaN(date.getTime()) || !isRealCalendarDate(trimmed)) throw new ValidationError(`${param}: "${value}" is neither epoch milliseconds nor a date`);
  storableDate(date, param);
  return date;
}

function nonEmpty<T>(list: T[] | undefined): T[] | undefined {
  return list && list.length > 0 ? list : undefined;
}

/**
 * Validates the query filters and applies the default window. Pure: `now` is passed in.
 * Throws ValidationError naming the parameter (and each invalid status).
 */
export function resolveRunListFilters(query: RunListQueryFilters, now: Date): RunListFilters {
  const filters: RunListFilters = {};
  if (query.status?.length) {
    const invalid = query.status.filter((s) => !isRunStatus(s) && !Object.hasOwn(LEGACY_RUN_STATUSES, s));
    if (invalid.length > 0) {
      throw new ValidationError(`filter[status]: Invalid status values: ${invalid.join(", ")} (valid: ${RUN_STATUSES.join(", ")})`);
    }
    filters.statuses = [...new Set(query.status.map((s) => (isRunStatus(s) ? s : LEGACY_RUN_STATUSES[s]!)))];
  }
  const lists = {
    taskIdentifiers: nonEmpty(query.taskIdentifier),
    versions: nonEmpty(query.version),
    tags: nonEmpty(query.tag),
    batchIds: nonEmpty(query.batch),
    scheduleIds: nonEmpty(query.schedule),
    queues: nonEmpty(query.queue),
  };
  for (const [key, value] of Object.entries(lists)) if (value) (filters as Record<string, unknown>)[key] = value;
  if (query.isTest !== undefined) filters.isTest = query.isTest === true || query.isTest === "true";

  if (query.period !== undefined) {
    const ms = parseDuration(query.period);
    if (ms === null || ms <= 0) throw new ValidationError(`filter[createdAt][period]: "${query.period}" is not a period such as 1h, 1d, 7d or 30d`);
    // A longer period than any date can reach back means "all of them".
    filters.createdFrom = new Date(now.getTime() - Math.min(ms, MAX_DURATION_MS));
  } else if (query.from !== undefined) {
    filters.createdFrom = parseInstant(query.from, "filter[createdAt][from]");
  }
  if (query.to !== undefined) filters.createdTo = parseInstant(query.to, "filter[createdAt][to]");
  if (query.sessionIds !== undefined) filters.sessionIds = query.sessionIds;
  if (query.idPrefix !== undefined) filters.idPrefix = query.idPrefix;
  const bulkActions = nonEmpty(query.bulkAction);
  if (bulkActions) {
    const invalid = bulkActions.filter((id) => !BULK_ACTION_ID.test(id));
    if (invalid.length > 0) throw new ValidationError(`filter[bulkAction]: ${invalid.map((id) => `"${id}"`).join(", ")} ${invalid.length === 1 ? "is not a bulk action id" : "are not bulk action ids"} (bulk_ and lowercase letters and digits)`);
    filters.bulkActionIds = [...new Set(bulkActions)];
  }
  if (!bulkActions && query.sessionIds === undefined && query.idPrefix === undefined && query.period === undefined && query.from === undefined && query.to === undefined) {
    filters.createdFrom = new Date(now.getTime() - DEFAULT_RUN_LIST_WINDOW_MS);
  }
  return filters;
}
