import { ValidationError, type RunListFilters } from "@svc/runtime/engine";
import type { BulkActionFilter } from "@svc/runtime/contracts";
import { resolveRunListFilters } from "./run-list-filters.ts";

const list = (value: string | string[] | undefined): string[] | undefined => (value === undefined ? undefined : Array.isArray(value) ? value : [value]);

/** The SDK's `{ type, name }` of a queue as the run list names it: a task's own queue is `task/<id>`. */
function queueName(queue: { type: "task" | "custom"; name: string }): string {
  return queue.type === "task" ? `task/${queue.name}` : queue.name;
}

/**
 * A bulk action's filter (the SDK's runs.list() filters, as JSON) as the run list's filters,
 * resolved by the run list's own rules (resolveRunListFilters: statuses checked, legacy names
 * mapped, the 7-day window unless a period or from/to is given). Refuses a filter that gives
 * nothing to match on, as Trigger.dev does: "every run" is asked for with a period at least.
 */
export function resolveBulkActionFilter(filter: BulkActionFilter, now: Date): RunListFilters {
  const given = Object.values(filter).filter((value) => value !== undefined);
  if (given.length === 0) throw new ValidationError("filter: At least one filter must be provided");
  const queues = filter.queue === undefined ? undefined : (Array.isArray(filter.queue) ? filter.queue : [filter.queue]).map(queueName);
  try {
    return resolveRunListFilters(
      {
        status: list(filter.status),
        taskIdentifier: list(filter.taskIdentifier),
        version: list(filter.version),
        tag: list(filter.tag),
        batch: list(filter.batch),
        schedule: list(filter.schedule),
        queue: queues,
        bulkAction: list(filter.bulkAction),
        ...(filter.isTest !== undefined ? { isTest: filter.isTest } : {}),
        ...(filter.period !== undefined ? { period: filter.period } : {}),
        ...(filter.from !== undefined ? { from: String(filter.from) } : {}),
        ...(filter.to !== undefined ? { to: String(filter.to) } : {}),
      },
      now,
    );
  } catch (error) {
    // The run list's messages name its query parameters; here they are fields of `filter`.
    if (error instanceof ValidationError) throw new ValidationError(error.message.replace(/^filter\[(?:createdAt\]\[)?(\w+)\]/, "filter.$1"), { cause: error });
    throw error;
  }
}
