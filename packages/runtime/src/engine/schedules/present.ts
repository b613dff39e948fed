import type { ScheduleObject } from "../../contracts/schedules.ts";
import type { Environment } from "../tenancy/environments.ts";
import { describeCron, nextTick } from "./cron.ts";
import type { ScheduleRow } from "./store.ts";

/**
 * A schedule as the API returns it (Trigger.dev's ScheduleObject). `nextRun` is the stored next
 * tick while active; for an inactive schedule it is computed from `now` (Trigger.dev shows it too).
 */
export function presentSchedule(row: ScheduleRow, env: Pick<Environment, "id" | "type">, now: Date): ScheduleObject {
  return {
    id: row.id,
    type: row.type,
    task: row.task_identifier,
    active: row.active,
    deduplicationKey: row.deduplication_key,
    externalId: row.external_id,
    generator: { type: "CRON", expression: row.cron, description: describeCron(row.cron) },
    timezone: row.timezone,
    nextRun: (row.active ? row.next_run_at : safeNext(row, now))?.toISOString() ?? null,
    environments: [{ id: env.id, type: env.type, userName: null }],
  };
}

function safeNext(row: ScheduleRow, now: Date): Date | null {
  try {
    return nextTick(row.cron, row.timezone, now);
  } catch {
    return null;
  }
}
