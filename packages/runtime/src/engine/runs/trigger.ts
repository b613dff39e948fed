import type { Queryable } from "../../db/queryable.ts";
import { withTransaction } from "../../db/queryable.ts";
import { resolveTime, parseTtl } from "../../durations.ts";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { encodePayload } from "./payloads.ts";
import { assertPacketUploaded } from "../packets/store.ts";
import { freesIdempotencyKey } from "./statuses.ts";
import type { RunRow } from "./store.ts";

export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 128;
export const DEFAULT_IDEMPOTENCY_TTL_MS = 30 * 86_400_000;

/** Where a run came from, when not a plain trigger. */
export interface TriggerLineage {
  parentRunId?: string;
  triggerFunction?: "trigger" | "triggerAndWait" | "batchTrigger" | "batchTriggerAndWait";
  batchId?: string;
  batchIndex?: number;
  scheduleId?: string;
}

export interface TriggerResult {
  id: string;
  isCached: boolean;
  run: RunRow;
}

export function normalizeTags(tags: string | string[] | undefined): string[] {
  const list = tags === undefined ? [] : Array.isArray(tags) ? tags : [tags];
  const clean = [...new Set(list.map((t) => t.trim()).filter((t) => t.length > 0))];
  if (clean.length > MAX_TAGS) throw new UnprocessableError(`Runs can only have ${MAX_TAGS} tags, you're trying to set ${clean.length}.`);
  const long = clean.find((t) => t.length > MAX_TAG_LENGTH);
  if (long) throw new ValidationError(`tags: each tag must be at most ${MAX_TAG_LENGTH} characters ("${long.slice(0, 20)}…")`);
  return clean;
}

/** The queue a task's runs go to when the trigger names none: the one its worker registered, else task/<id>. */
async function defaultQueue(db: Queryable, environmentId: string, taskIdentifier: string): Promise<string> {
  const { rows } = await db.query<{ queue_name: string }>(
    `SELECT queue_name FROM worker_tasks WHERE environment_id = $1 AND task_identifier = $2`,
    [environmentId, taskIdentifier],
  );
  return rows[0]?.queue_name ?? `task/${taskIdentifier}`;
}

/**
 * Creates a run (or returns the live run holding the same idempotency key) and enqueues it,
 * all in `tx`. Unknown task ids are accepted: the run stays QUEUED until a worker has the task.
 */
export async function triggerRunInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  taskIdentifier: string,
  payload: unknown,
  options: TriggerOptions = {},
  lineage: TriggerLineage = {},
): Promise<TriggerResult> {
  if (!taskIdentifier || taskIdentifier.length > 128) throw new ValidationError("taskId: must be 1 to 128 characters");
  const now = deps.clock.now();
  const tags = normalizeTags(options.tags);
  const packet = encodePayload(payload, options.payloadType ?? "application/json");
  if (packet.type === "application/store") await assertPacketUploaded(tx, env.id, packet.data!);
  const delayUntil = options.delay !== undefined ? resolveTime(options.delay, now, "delay") : null;
  const isDelayed = delayUntil !== null && delayUntil.getTime() > now.getTime();
  let expireAt: Date | null = null;
  let ttlText: string | null = null;
  if (options.ttl !== undefined) {
    ttlText = typeof options.ttl === "number" ? `${options.ttl}s` : options.ttl;
    const ttlMs = typeof options.ttl === "number" ? options.ttl * 1000 : parseTtl(options.ttl, "ttl");
    expireAt = new Date((isDelayed ? delayUntil!.getTime() : now.getTime()) + ttlMs);
  }
  if (options.metadata !== undefined && (typeof options.metadata !== "object" || options.metadata === null || Array.isArray(options.metadata))) {
    throw new ValidationError("metadata: must be a JSON object");
  }

  const idempotencyKey = options.idempotencyKey ?? null;
  const keyTtlMs = options.idempotencyKeyTTL ? parseTtl(options.idempotencyKeyTTL, "idempotencyKeyTTL") : DEFAULT_IDEMPOTENCY_TTL_MS;
  if (idempotencyKey) {
    const cached = await findLiveIdempotentRun(tx, env.id, taskIdentifier, idempotencyKey, now);
    if (cached) return { id: cached.id, isCached: true, run: cached };
  }

  let parent: RunRow | null = null;
  if (lineage.parentRunId ?? options.parentRunId) {
    const { rows } = await tx.query<RunRow>(`SELECT * FROM runs WHERE id = $1 AND environment_id = $2`, [
      lineage.parentRunId ?? options.parentRunId,
      env.id,
    ]);
    parent = rows[0] ?? null;
    if (!parent) throw new UnprocessableError(`parentRunId: run ${lineage.parentRunId ?? options.parentRunId} not found`);
  }

  const id = newId.run();
  const queueName = options.queue?.name ?? (await defaultQueue(tx, env.id, taskIdentifier));
  const concurrencyKey = options.concurrencyKey !== undefined ? String(options.concurrencyKey) : null;
  const { rows } = await tx.query<RunRow>(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, concurrency_key,
       payload, payload_type, idempotency_key, idempotency_key_user, idempotency_key_expires_at, tags, metadata,
       max_attempts, max_duration_s, ttl, expire_at, delay_until, parent_run_id, root_run_id, depth,
       trigger_function, batch_id, batch_index, schedule_id, is_test, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
       $23, $24, $25, $26, $27, $28, $28)
     ON CONFLICT (environment_id, task_identifier, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING *`,
    [
      id,
      env.id,
      env.projectId,
      taskIdentifier,
      isDelayed ? "DELAYED" : "QUEUED",
      queueName,
      concurrencyKey,
      packet.data,
      packet.type,
      idempotencyKey,
      idempotencyKey ? (options.idempotencyKeyOptions?.key ?? idempotencyKey) : null,
      idempotencyKey ? new Date(now.getTime() + keyTtlMs) : null,
      tags,
      options.metadata === undefined ? null : JSON.stringify(options.metadata),
      options.maxAttempts ?? null,
      options.maxDuration ?? null,
      ttlText,
      expireAt,
      isDelayed ? delayUntil : null,
      parent?.id ?? null,
      parent ? (parent.root_run_id ?? parent.id) : null,
      parent ? parent.depth + 1 : 0,
      lineage.triggerFunction ?? "trigger",
      lineage.batchId ?? null,
      lineage.batchIndex ?? null,
      lineage.scheduleId ?? null,
      options.test ?? false,
      now,
    ],
  );
  const run = rows[0];
  if (!run) {
    // Another transaction inserted the same key after our lookup and committed: return its run.
    const cached = await findLiveIdempotentRun(tx, env.id, taskIdentifier, idempotencyKey!, now);
    if (cached) return { id: cached.id, isCached: true, run: cached };
    throw new Error("idempotent insert conflicted but no run holds the key");
  }
  if (!isDelayed) {
    await deps.dispatcher.dispatch(tx, [
      { kind: "start", runId: run.id, environmentId: env.id, queueName, concurrencyKey },
    ]);
  }
  return { id: run.id, isCached: false, run };
}

/**
 * The run that still holds `key`. Runs that failed or expired free their key, as does a key past
 * its TTL; the key is cleared on the old run so the new one can take it.
 */
async function findLiveIdempotentRun(db: Queryable, environmentId: string, taskIdentifier: string, key: string, now: Date): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>(
    `SELECT * FROM runs WHERE environment_id = $1 AND task_identifier = $2 AND idempotency_key = $3 FOR UPDATE`,
    [environmentId, taskIdentifier, key],
  );
  const existing = rows[0];
  if (!existing) return null;
  const expired = existing.idempotency_key_expires_at !== null && existing.idempotency_key_expires_at.getTime() <= now.getTime();
  if (expired || freesIdempotencyKey(existing.status)) {
    await db.query(`UPDATE runs SET idempotency_key = NULL, updated_at = now() WHERE id = $1`, [existing.id]);
    return null;
  }
  return existing;
}

/** Triggers one run in its own transaction. */
export async function triggerRun(
  deps: EngineDeps,
  env: Environment,
  taskIdentifier: string,
  payload: unknown,
  options: TriggerOptions = {},
  lineage: TriggerLineage = {},
): Promise<TriggerResult> {
  return withTransaction(deps.db, (tx) => triggerRunInTransaction(deps, tx, env, taskIdentifier, payload, options, lineage));
}
