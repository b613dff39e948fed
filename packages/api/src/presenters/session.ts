import { sessionStatus, type SessionRow } from "@svc/runtime/engine";
import type { SessionItem } from "@svc/runtime/contracts";

const iso = (date: Date | null) => (date === null ? null : date.toISOString());

/** A session as the API hands it out; list items leave out triggerConfig. */
export function presentSession(row: SessionRow, now: Date, options: { withTriggerConfig?: boolean } = {}): SessionItem {
  return {
    id: row.id,
    externalId: row.external_id,
    type: row.type,
    taskIdentifier: row.task_identifier,
    ...(options.withTriggerConfig === false ? {} : { triggerConfig: row.trigger_config }),
    currentRunId: row.current_run_id,
    status: sessionStatus(row, now),
    tags: row.tags,
    metadata: row.metadata,
    closedAt: iso(row.closed_at),
    closedReason: row.closed_reason,
    expiresAt: iso(row.expires_at),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
