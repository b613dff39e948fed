import { LATEST_DATE_MS, parseTtl, resolveTime, storableDate, withinMaxDuration } from "../../durations.ts";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { CONCURRENCY_LIMIT_NAME } from "../../contracts/concurrency-limits.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { Environment } from "../tenancy/environments.ts";
import { debounceWindow } from "./debounce-window.ts";
import { gatesOf, type Gate } from "./gates.ts";
import { encodePayload, type Packet } from "./payloads.ts";
import type { RunRow } from "./store.ts";
import { runRateOf, type RunRate } from "./trigger-rate-limit.ts";

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
  /** The SHA-256 of the one-time-use public token that triggered the run: a second use is refused. */
  oneTimeUseToken?: string;
  /** The W3C traceparent the run's attempts are children of (traces on): the trigger's span, or the parent run's attempt. */
  traceparent?: string;
  /**
   * A replay from failure (replay-from-failure.ts): the ledger epoch its copied entries are in.
   * Above 0, so the run's first claim reads its ledger and no start offer (which carries none) takes it.
   */
  ledgerEpoch?: number;
}

/** A run about to be inserted: every column decided, except a default queue still to look up. */
export interface RunPlan {
  id: string;
  taskIdentifier: string;
  status: "QUEUED" | "DELAYED";
  /** null: the task's registered queue (or task/<id>) is looked up at insert time. */
  queueName: string | null;
  concurrencyKey: string | null;
  /** The run's rate key (options.rateLimit.key): its copy of its queue's rateLimit. */
  rateLimitKey: string | null;
  /** The run's own rate bound (options.rateLimit's limit and period), besides its queue's. */
  ownRate: RunRate["own"];
  /** The named concurrency limits the run holds (options.concurrency), distinct and sorted (as svc_trigger_run stores them); null: none. */
  concurrencyLimits: string[] | null;
  /** The other queues the run must also fit in (options.gates), distinct, in the order given; null: none. */
  gates: Gate[] | null;
  packet: Packet;
  idempotencyKey: string | null;
  idempotencyKeyUser: string | null;
  /** `idempotencyKeyOptions.scope` as the SDK sent it (run, attempt or global). */
  idempotencyKeyScope: string | null;
  idempotencyKeyExpiresAt: Date | null;
  tags: string[];
  metadata: string | null;
  maxAttempts: number | null;
  maxDurationS: number | null;
  ttl: string | null;
  expireAt: Date | null;
  delayUntil: Date | null;
  parent: Pick<RunRow, "id" | "root_run_id" | "depth"> | null;
  lineage: TriggerLineage;
  isTest: boolean;
  createdAt: Date;
}

export function normalizeTags(tags: string | string[] | undefined): string[] {
  const list = tags === undefined ? [] : Array.isArray(tags) ? tags : [tags];
  const clean = [...new Set(list.map((t) => t.trim()).filter((t) => t.length > 0))];
  if (clean.length > MAX_TAGS) throw new UnprocessableError(`Runs can only have ${MAX_TAGS} tags, you're trying to set ${clean.length}.`);
  const long = clean.find((t) => t.length > MAX_TAG_LENGTH);
  if (long) throw new ValidationError(`tags: each tag must be at most ${MAX_TAG_LENGTH} characters ("${long.slice(0, 20)}…")`);
  return clean;
}

/** Decides every column of a new run from the trigger's input; pure apart from the id. Throws on bad input. */
export function planRun(
  taskIdentifier: string,
  payload: unknown,
  options: TriggerOptions,
  lineage: TriggerLineage,
  parent: RunPlan["parent"],
  now: Date,
): RunPlan {
  if (!taskIdentifier || taskIdentifier.length > 128) throw new ValidationError("taskId: must be 1 to 128 characters");
  const tags = normalizeTags(options.tags);
  const packet = encodePayload(payload, options.payloadType ?? "application/json");
  // A debounced run is delayed by its debounce delay (debounce.ts), whatever `delay` says.
  const delayUntil = options.debounce
    ? new Date(now.getTime() + debounceWindow(options.debounce).delayMs)
    : options.delay !== undefined
      ? resolveTime(options.delay, now, "delay")
      : null;
  const isDelayed = delayUntil !== null && delayUntil.getTime() > now.getTime();
  let expireAt: Date | null = null;
  let ttl: string | null = null;
  if (options.ttl !== undefined) {
    ttl = typeof options.ttl === "number" ? `${options.ttl}s` : options.ttl;
    const ttlMs = typeof options.ttl === "number" ? withinMaxDuration(options.ttl * 1000, "ttl", ttl) : parseTtl(options.ttl, "ttl");
    // A delay near the latest date plus a TTL can run past it: such a run expires at the latest
    // date a run can hold, which is never in practice (a TTL only ever shortens a run's life).
    expireAt = storableDate(new Date(Math.min(LATEST_DATE_MS, (isDelayed ? delayUntil!.getTime() : now.getTime()) + ttlMs)), "ttl");
  }
  if (options.metadata !== undefined && (typeof options.metadata !== "object" || options.metadata === null || Array.isArray(options.metadata))) {
    throw new ValidationError("metadata: must be a JSON object");
  }
  const rate = runRateOf(options.rateLimit);
  const idempotencyKey = options.idempotencyKey ?? null;
  const keyTtlMs = options.idempotencyKeyTTL ? parseTtl(options.idempotencyKeyTTL, "idempotencyKeyTTL") : DEFAULT_IDEMPOTENCY_TTL_MS;
  return {
    id: newId.run(),
    taskIdentifier,
    status: isDelayed ? "DELAYED" : "QUEUED",
    queueName: options.queue?.name ?? null,
    concurrencyKey: options.concurrencyKey !== undefined ? String(options.concurrencyKey) : null,
    rateLimitKey: rate.key,
    ownRate: rate.own,
    concurrencyLimits: concurrencyLimitsOf(options.concurrency),
    gates: gatesOf(options.gates),
    packet,
    idempotencyKey,
    idempotencyKeyUser: idempotencyKey ? (options.idempotencyKeyOptions?.key ?? idempotencyKey) : null,
    idempotencyKeyScope: idempotencyKey ? (options.idempotencyKeyOptions?.scope ?? null) : null,
    idempotencyKeyExpiresAt: idempotencyKey ? new Date(now.getTime() + keyTtlMs) : null,
    tags,
    metadata: options.metadata === undefined ? null : JSON.stringify(options.metadata),
    maxAttempts: options.maxAttempts ?? null,
    maxDurationS: options.maxDuration ?? null,
    ttl,
    expireAt,
    delayUntil: isDelayed ? delayUntil : null,
    parent,
    lineage,
    isTest: options.test ?? false,
    createdAt: now,
  };
}

/**
 * The named concurrency limits a trigger's `concurrency` option names, distinct and sorted (null:
 * none). Checked here as well as by the route's schema, with svc_trigger_run's message.
 */
function concurrencyLimitsOf(option: unknown): string[] | null {
  if (option === undefined || option === null) return null;
  if (!Array.isArray(option) || option.length > 2 || !option.every((n) => typeof n === "string" && CONCURRENCY_LIMIT_NAME.test(n))) {
    throw new ValidationError("options.concurrency: must be a list of at most 2 names of 1-122 letters, digits, `_` or `-`");
  }
  return option.length === 0 ? null : [...new Set(option as string[])].sort();
}

export type { Environment };
