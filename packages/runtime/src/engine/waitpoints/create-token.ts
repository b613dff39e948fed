import { withTransaction, type Queryable } from "../../db/queryable.ts";
import { parseTtl, resolveTime } from "../../durations.ts";
import { UnprocessableError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { CHANNELS } from "../channels.ts";
import type { EngineDeps } from "../deps.ts";
import type { WaitpointRow } from "./store.ts";

/** A token times out after 10 minutes unless told otherwise (the management API's default). */
export const DEFAULT_TOKEN_TIMEOUT = "10m";
/** An idempotency key is reusable for one hour unless told otherwise (the management API's default). */
export const DEFAULT_TOKEN_IDEMPOTENCY_TTL = "1h";
export const MAX_TOKEN_TAGS = 10;
export const MAX_TOKEN_TAG_LENGTH = 128;

export interface CreateTokenInput {
  idempotencyKey?: string;
  /** Duration; default "1h". */
  idempotencyKeyTTL?: string;
  /** Duration ("10m"), ISO date, Date, or epoch ms; default "10m". A past date times out at once. */
  timeout?: string | number | Date;
  tags?: string | string[];
}

export interface CreateTokenResult {
  waitpoint: WaitpointRow;
  /** True when an unexpired idempotency key returned an existing token (whatever its status). */
  isCached: boolean;
}

/** Trims, drops blanks and duplicates, and enforces the per-token limits (422 for count, 400 for length). */
export function normalizeTokenTags(tags: string | string[] | undefined): string[] {
  const list = tags === undefined ? [] : Array.isArray(tags) ? tags : [tags];
  const clean = [...new Set(list.map((t) => t.trim()).filter((t) => t.length > 0))];
  if (clean.length > MAX_TOKEN_TAGS) {
    throw new UnprocessableError(`Waitpoints can only have ${MAX_TOKEN_TAGS} tags, you're trying to set ${clean.length}.`);
  }
  const long = clean.find((t) => t.length > MAX_TOKEN_TAG_LENGTH);
  if (long) throw new ValidationError(`tags: each tag must be at most ${MAX_TOKEN_TAG_LENGTH} characters ("${long.slice(0, 20)}…")`);
  return clean;
}

/** Validated, absolute-time version of the input: a pure function of the input and `now`. */
export function planToken(input: CreateTokenInput, now: Date) {
  const timeout = input.timeout ?? DEFAULT_TOKEN_TIMEOUT;
  // A number is epoch milliseconds (what a JSON-encoded Date becomes in some clients).
  const timeoutAt = resolveTime(typeof timeout === "number" ? new Date(timeout) : timeout, now, "timeout");
  const ttlMs = parseTtl(input.idempotencyKeyTTL ?? DEFAULT_TOKEN_IDEMPOTENCY_TTL, "idempotencyKeyTTL");
  const key = input.idempotencyKey ?? null;
  return {
    timeoutAt,
    tags: normalizeTokenTags(input.tags),
    idempotencyKey: key,
    idempotencyKeyExpiresAt: key === null ? null : new Date(now.getTime() + ttlMs),
  };
}

/**
 * Creates a MANUAL waitpoint (a token) in `tx`, or returns the token that holds the same
 * idempotency key in this environment. Concurrent creates with one key yield one token: the
 * insert goes through the unique index `waitpoints_idempotency` with ON CONFLICT DO NOTHING, and
 * the losers re-read the winner's row once it committed.
 */
export async function createTokenInTransaction(
  deps: Pick<EngineDeps, "clock">,
  tx: Queryable,
  environmentId: string,
  input: CreateTokenInput,
): Promise<CreateTokenResult> {
  const now = deps.clock.now();
  const plan = planToken(input, now);
  const key = plan.idempotencyKey;
  // A few rounds at most: a round only repeats when the row we conflicted with lost its key
  // (expired and retired by a third transaction) before we could read it.
  for (let round = 0; round < 5; round++) {
    if (key !== null) {
      const cached = await findLiveTokenByKey(tx, environmentId, key, now);
      if (cached) return { waitpoint: cached, isCached: true };
    }
    const { rows } = await tx.query<WaitpointRow>(
      `INSERT INTO waitpoints (id, environment_id, type, status, timeout_at, idempotency_key, idempotency_key_user_provided,
         idempotency_key_expires_at, tags, created_at)
       VALUES ($1, $2, 'MANUAL', 'WAITING', $3, $4, $5, $6, $7, $8)
       ON CONFLICT (environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
       RETURNING *`,
      [newId.waitpoint(), environmentId, plan.timeoutAt, key, key !== null, plan.idempotencyKeyExpiresAt, plan.tags, now],
    );
    const created = rows[0];
    if (created) {
      // Timer loops re-plan: this token's timeout may be the next thing due.
      await tx.query(`SELECT pg_notify($1, $2)`, [CHANNELS.timers, plan.timeoutAt.toISOString()]);
      return { waitpoint: created, isCached: false };
    }
    // Another transaction took the key after our lookup and committed; this statement's fresh
    // snapshot (READ COMMITTED) sees its row on the next round.
  }
  throw new Error(`could not create or find the waitpoint holding idempotency key "${key}"`);
}

/**
 * The token that holds `key`, locked; null when none does. A key past its TTL is retired on the
 * spot: it moves to `inactive_idempotency_key` (list filters still find it) and frees the key.
 */
async function findLiveTokenByKey(tx: Queryable, environmentId: string, key: string, now: Date): Promise<WaitpointRow | null> {
  const { rows } = await tx.query<WaitpointRow>(
    `SELECT * FROM waitpoints WHERE environment_id = $1 AND idempotency_key = $2 FOR UPDATE`,
    [environmentId, key],
  );
  const existing = rows[0];
  if (!existing) return null;
  const expiresAt = existing.idempotency_key_expires_at;
  if (expiresAt === null || expiresAt.getTime() > now.getTime()) return existing;
  await tx.query(
    `UPDATE waitpoints SET inactive_idempotency_key = idempotency_key, idempotency_key = NULL WHERE id = $1 AND idempotency_key = $2`,
    [existing.id, key],
  );
  return null;
}

/** Creates a token in its own transaction. */
export async function createToken(deps: Pick<EngineDeps, "db" | "clock">, environmentId: string, input: CreateTokenInput): Promise<CreateTokenResult> {
  return withTransaction(deps.db, (tx) => createTokenInTransaction(deps, tx, environmentId, input));
}
