import superjson from "superjson";
import { decodePacket, type Packet } from "./payloads.ts";
import { statusFlags, type RunStatus } from "./statuses.ts";
import type { RunRow } from "./store.ts";

/**
 * Trigger.dev's run object (the fields both list items and retrieve carry). Optional fields are
 * left out rather than null: the published SDK's zod schemas reject null there.
 */
export interface RunObject {
  id: string;
  status: RunStatus;
  taskIdentifier: string;
  idempotencyKey?: string;
  version?: string;
  isQueued: boolean;
  isExecuting: boolean;
  isWaiting: boolean;
  isCompleted: boolean;
  isSuccess: boolean;
  isFailed: boolean;
  isCancelled: boolean;
  isTest: boolean;
  createdAt: string;
  updatedAt: string;
  startedAt?: string;
  finishedAt?: string;
  delayedUntil?: string;
  expiredAt?: string;
  ttl?: string;
  tags: string[];
  costInCents: number;
  baseCostInCents: number;
  durationMs: number;
  metadata?: Record<string, unknown>;
}

export interface RunListItem extends RunObject {
  env: { id: string; name: string };
}

/** A parent, root or child run inside `relatedRuns`. */
export interface RelatedRunObject extends RunObject {
  depth: number;
  triggerFunction: string;
  batchId?: string;
}

/** `{message, name?, stackTrace?}`: Trigger.dev's SerializedError. */
export interface RunErrorObject {
  message: string;
  name?: string;
  stackTrace?: string;
}

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

export function presentRunListItem(run: RunRow & { environment_slug: string }): RunListItem {
  return { ...presentRun(run), env: { id: run.environment_id, name: run.environment_slug } };
}

export function presentRelatedRun(run: RunRow): RelatedRunObject {
  const object: RelatedRunObject = { ...presentRun(run), depth: run.depth, triggerFunction: run.trigger_function };
  put(object, "batchId", run.batch_id);
  return object;
}

/**
 * A stored run error (`{type:'user', name, message, stack}` or `{type:'internal', code, message?}`)
 * as Trigger.dev's SerializedError; undefined when there is none.
 */
export function presentRunError(error: unknown): RunErrorObject | undefined {
  if (error === null || error === undefined) return undefined;
  if (typeof error === "string") return { message: error };
  if (typeof error !== "object") return { message: String(error) };
  const e = error as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined);
  const object: RunErrorObject = { message: text(e.message) ?? text(e.code) ?? text(e.raw) ?? "Unknown error" };
  put(object, "name", text(e.name) ?? (e.type === "internal" ? text(e.code) : undefined));
  put(object, "stackTrace", text(e.stack) ?? text(e.stackTrace));
  return object;
}

/**
 * A stored packet as the plain JSON value the SDK's `runs.retrieve` expects (Trigger.dev's
 * parsePacketAsJson): super+json keeps only its JSON part (a Date becomes its ISO string), text
 * stays text. Text that no longer parses is returned as is rather than failing the request.
 */
export function packetAsJson(packet: Packet): unknown {
  if (packet.data === null || packet.data === undefined) return undefined;
  try {
    if (packet.type === "application/super+json") return superjson.serialize(decodePacket(packet)).json;
    if (packet.type === "application/json") return decodePacket(packet);
    return packet.data;
  } catch {
    return packet.data;
  }
}
