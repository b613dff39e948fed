// Run rows as the run object of the HTTP API (contracts/run-object.ts). Optional fields are left
// out rather than null: the published SDK's zod schemas reject null there.
import { statusFlags, type RunListRow, type RunRow, type RunWait } from "@svc/runtime/engine";
import type { RelatedRun, RunError, RunListItem, RunObject } from "@svc/runtime/contracts";
import { presentWaitingFor } from "./waiting-for.ts";

function iso(date: Date | null | undefined): string | undefined {
  return date ? date.toISOString() : undefined;
}

/** Sets `key` only when `value` is present, so absent fields stay absent in JSON. */
function put<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | null | undefined): void {
  if (value !== undefined && value !== null) target[key] = value;
}

export function presentRun(run: RunRow): RunObject {
  const object: RunObject = {
    id: run.id,
    status: run.status,
    taskIdentifier: run.task_identifier,
    ...statusFlags(run.status),
    isTest: run.is_test,
    createdAt: run.created_at.toISOString(),
    updatedAt: run.updated_at.toISOString(),
    tags: [...run.tags].sort(),
    costInCents: 0,
    baseCostInCents: 0,
    durationMs: run.started_at && run.finished_at ? Math.max(0, run.finished_at.getTime() - run.started_at.getTime()) : 0,
  };
  put(object, "idempotencyKey", run.idempotency_key_user ?? run.idempotency_key);
  put(object, "version", run.worker_version);
  put(object, "startedAt", iso(run.started_at));
  put(object, "finishedAt", iso(run.finished_at));
  put(object, "delayedUntil", iso(run.delay_until));
  put(object, "expiredAt", iso(run.expired_at));
  put(object, "ttl", run.ttl);
  if (run.metadata && typeof run.metadata === "object" && !Array.isArray(run.metadata)) {
    object.metadata = run.metadata as Record<string, unknown>;
  }
  return object;
}

/** A run of a list, with what it waits on (`waits`: empty unless it is WAITING on a pending waitpoint). */
export function presentRunListItem(run: RunListRow, waits: readonly RunWait[]): RunListItem {
  return { ...presentRun(run), env: { id: run.environment_id, name: run.environment_slug }, waitingFor: presentWaitingFor(waits) };
}

export function presentRelatedRun(run: RunRow): RelatedRun {
  const object: RelatedRun = { ...presentRun(run), depth: run.depth, triggerFunction: run.trigger_function };
  put(object, "batchId", run.batch_id);
  return object;
}

/**
 * A stored run error (`{type:'user', name, message, stack}` or `{type:'internal', code, message?}`)
 * as Trigger.dev's SerializedError; undefined when there is none.
 */
export function presentRunError(error: unknown): RunError | undefined {
  if (error === null || error === undefined) return undefined;
  if (typeof error === "string") return { message: error };
  if (typeof error !== "object") return { message: String(error) };
  const e = error as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined);
  const object: RunError = { message: text(e.message) ?? text(e.code) ?? text(e.raw) ?? "Unknown error" };
  put(object, "name", text(e.name) ?? (e.type === "internal" ? text(e.code) : undefined));
  put(object, "stackTrace", text(e.stack) ?? text(e.stackTrace));
  return object;
}
