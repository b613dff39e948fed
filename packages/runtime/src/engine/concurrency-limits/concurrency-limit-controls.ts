import { KEY_OVERRIDE_TTL_DEFAULT_S, KEY_OVERRIDE_TTL_MAX_S } from "../../contracts/concurrency-limits.ts";
import { withTransaction } from "../../db/queryable.ts";
import { parseDuration } from "../../durations.ts";
import { ValidationError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import { notifyQueuesChanged } from "../queues/queue-controls.ts";
import { retrieveConcurrencyLimit, retrieveConcurrencyLimitKey, type ConcurrencyLimitKeyState, type ConcurrencyLimitState } from "./concurrency-limits.ts";

/**
 * What an operator changes on a named concurrency limit: its bounds (an override until a reset),
 * one concurrencyKey's temporary cap, pause and resume. Setting a limit that has no row yet creates
 * it. Each change is one guarded statement on the limit's row; when it changed something the
 * environment's workers hear of it (CHANNELS.queuesChanged) and claim, so that a raised, reset or
 * resumed limit starts its waiting runs at once. No run moves: a run that holds a named limit is
 * always claimed by the limited claim (runs.claim_from_runs false), which reads the limit as it is.
 */

type Deps = Pick<EngineDeps, "db">;

/** Overrides the limit's `perKey` and/or `total` (0: no starts) until a reset; the other bound is left as it is. */
export async function overrideConcurrencyLimit(deps: Deps, environmentId: string, name: string, bounds: { perKey?: number; total?: number }, now: Date): Promise<ConcurrencyLimitState> {
  const { rowCount } = await deps.db.query(
    `INSERT INTO concurrency_limits AS cl (environment_id, name, per_key_override, total_override, overridden_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $5, $5)
     ON CONFLICT (environment_id, name) DO UPDATE SET
       per_key_override = coalesce($3, cl.per_key_override), total_override = coalesce($4, cl.total_override), overridden_at = $5, updated_at = $5
     WHERE cl.per_key_override IS DISTINCT FROM coalesce($3, cl.per_key_override) OR cl.total_override IS DISTINCT FROM coalesce($4, cl.total_override)`,
    [environmentId, name, bounds.perKey ?? null, bounds.total ?? null, now],
  );
  if (rowCount) await notifyQueuesChanged(deps.db, environmentId);
  return retrieveConcurrencyLimit(deps.db, environmentId, name);
}

/** Caps one concurrencyKey's pool of the limit at `perKey` until `expiresAt` (or a reset with the key). */
export async function overrideConcurrencyLimitKey(deps: Deps, environmentId: string, name: string, concurrencyKey: string, perKey: number, expiresAt: Date, now: Date): Promise<ConcurrencyLimitKeyState> {
  const changed = await withTransaction(deps.db, async (tx) => {
    await tx.query(
      `INSERT INTO concurrency_limits (environment_id, name, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (environment_id, name) DO NOTHING`,
      [environmentId, name, now],
    );
    const { rowCount } = await tx.query(
      `INSERT INTO concurrency_limit_keys AS k (environment_id, name, concurrency_key, per_key, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (environment_id, name, concurrency_key) DO UPDATE SET per_key = $4, expires_at = $5
       WHERE k.per_key <> $4 OR k.expires_at <> $5`,
      [environmentId, name, concurrencyKey, perKey, expiresAt, now],
    );
    return (rowCount ?? 0) > 0;
  });
  if (changed) await notifyQueuesChanged(deps.db, environmentId);
  return retrieveConcurrencyLimitKey(deps.db, environmentId, name, concurrencyKey, now);
}

/** Pauses (`paused`: no run holding the limit starts; runs under way go on) or resumes the limit. */
export async function setConcurrencyLimitPaused(deps: Deps, environmentId: string, name: string, paused: boolean, now: Date): Promise<ConcurrencyLimitState> {
  const { rowCount } = await deps.db.query(
    `INSERT INTO concurrency_limits AS cl (environment_id, name, paused, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (environment_id, name) DO UPDATE SET paused = $3, updated_at = $4 WHERE cl.paused <> $3`,
    [environmentId, name, paused, now],
  );
  if (rowCount) await notifyQueuesChanged(deps.db, environmentId);
  return retrieveConcurrencyLimit(deps.db, environmentId, name);
}

/** Drops the limit's overrides: the bounds its tasks declare apply again (none declared: it limits nothing but a pause). */
export async function resetConcurrencyLimit(deps: Deps, environmentId: string, name: string, now: Date): Promise<ConcurrencyLimitState> {
  const { rowCount } = await deps.db.query(
    `UPDATE concurrency_limits SET per_key_override = NULL, total_override = NULL, overridden_at = NULL, updated_at = $3
     WHERE environment_id = $1 AND name = $2 AND (per_key_override IS NOT NULL OR total_override IS NOT NULL)`,
    [environmentId, name, now],
  );
  if (rowCount) await notifyQueuesChanged(deps.db, environmentId);
  return retrieveConcurrencyLimit(deps.db, environmentId, name);
}

/** Drops one concurrencyKey's cap: the limit's perKey applies to it again. */
export async function resetConcurrencyLimitKey(deps: Deps, environmentId: string, name: string, concurrencyKey: string, now: Date): Promise<ConcurrencyLimitKeyState> {
  const { rowCount } = await deps.db.query(
    `DELETE FROM concurrency_limit_keys WHERE environment_id = $1 AND name = $2 AND concurrency_key = $3`,
    [environmentId, name, concurrencyKey],
  );
  if (rowCount) await notifyQueuesChanged(deps.db, environmentId);
  return retrieveConcurrencyLimitKey(deps.db, environmentId, name, concurrencyKey, now);
}

/** When a key override given `ttl` (a duration such as "7d", or seconds; 7 days by default, at most 30) made at `now` lapses. */
export function keyOverrideExpiresAt(ttl: string | number | undefined, now: Date): Date {
  const ms = ttl === undefined ? KEY_OVERRIDE_TTL_DEFAULT_S * 1000 : typeof ttl === "number" ? ttl * 1000 : parseDuration(ttl);
  if (ms === null) throw new ValidationError(`ttl: "${String(ttl)}" is not a duration (e.g. "1h", "7d") nor a number of seconds`);
  if (!(ms > 0) || ms > KEY_OVERRIDE_TTL_MAX_S * 1000) throw new ValidationError(`ttl: must be more than 0 and at most ${KEY_OVERRIDE_TTL_MAX_S / 86_400} days`);
  return new Date(now.getTime() + ms);
}
