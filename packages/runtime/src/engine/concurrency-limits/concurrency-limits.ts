import type { Queryable } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";

/**
 * Named concurrency limits as the concurrency-limits API reads them (migration 0048): a row per
 * limit task code declared (migration 0050: declared-limits.ts) or an operator set, paused or
 * overrode. A run holds the limits its task declares, or those its trigger's `concurrency` option
 * names (runs.concurrency_limits); the limited claim counts the executing runs that hold them
 * (CLAIM_LIMITED_SQL, engine/runs/transitions/claim-ready.ts).
 */

/** One limit of an environment, with its bounds and its runs now. */
export interface ConcurrencyLimitState {
  id: string;
  name: string;
  /** Declared bounds (the strictest its registered tasks declare: declared-limits.ts) and an operator's overrides. */
  perKey: number | null;
  total: number | null;
  perKeyOverride: number | null;
  totalOverride: number | null;
  overriddenAt: Date | null;
  paused: boolean;
  /** EXECUTING runs holding the limit. */
  running: number;
  /** QUEUED runs holding the limit whose start is due. */
  queued: number;
}

/** One concurrencyKey's pool of a limit. */
export interface ConcurrencyLimitKeyState {
  name: string;
  concurrencyKey: string;
  /** The limit's perKey as enforced (its override, else the declared one); null: none. */
  perKey: number | null;
  /** The key's own temporary cap, while it lasts; null: none. */
  keyOverride: number | null;
  expiresAt: Date | null;
  paused: boolean;
  /** EXECUTING runs of this key holding the limit. */
  running: number;
}

interface LimitRow {
  id: string;
  name: string;
  per_key: number | null;
  total: number | null;
  per_key_override: number | null;
  total_override: number | null;
  overridden_at: Date | null;
  paused: boolean;
  running: number;
  queued: number;
}

/** The columns of LimitRow for the concurrency_limits rows `cl` of environment `$1` (indexes runs_named_executing, runs_named_live). */
const STATE_COLUMNS = `cl.id, cl.name, cl.per_key, cl.total, cl.per_key_override, cl.total_override, cl.overridden_at, cl.paused,
       (SELECT count(*)::int FROM runs r WHERE r.environment_id = $1 AND r.status = 'EXECUTING' AND r.concurrency_limits IS NOT NULL AND cl.name = ANY (r.concurrency_limits)) AS running,
       (SELECT count(*)::int FROM runs r WHERE r.environment_id = $1 AND r.list_status = 'LIVE' AND r.status = 'QUEUED' AND r.available_at IS NULL AND r.concurrency_limits IS NOT NULL AND cl.name = ANY (r.concurrency_limits)) AS queued`;

function stateOf(row: LimitRow): ConcurrencyLimitState {
  return {
    id: row.id,
    name: row.name,
    perKey: row.per_key,
    total: row.total,
    perKeyOverride: row.per_key_override,
    totalOverride: row.total_override,
    overriddenAt: row.overridden_at,
    paused: row.paused,
    running: row.running,
    queued: row.queued,
  };
}

/** A page of the environment's limits, by name. */
export async function listConcurrencyLimits(db: Queryable, environmentId: string, page: number, perPage: number): Promise<{ limits: ConcurrencyLimitState[]; count: number }> {
  const [{ rows }, counted] = await Promise.all([
    db.query<LimitRow>(
      `SELECT ${STATE_COLUMNS} FROM concurrency_limits cl WHERE cl.environment_id = $1 ORDER BY cl.name LIMIT $2 OFFSET $3`,
      [environmentId, perPage, (page - 1) * perPage],
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM concurrency_limits WHERE environment_id = $1`, [environmentId]),
  ]);
  return { limits: rows.map(stateOf), count: counted.rows[0]?.n ?? 0 };
}

/** The limit `name`; 404 when nobody set it. */
export async function retrieveConcurrencyLimit(db: Queryable, environmentId: string, name: string): Promise<ConcurrencyLimitState> {
  const { rows } = await db.query<LimitRow>(`SELECT ${STATE_COLUMNS} FROM concurrency_limits cl WHERE cl.environment_id = $1 AND cl.name = $2`, [environmentId, name]);
  const row = rows[0];
  if (!row) throw new NotFoundError(`No concurrency limit named "${name}" (set one with POST /api/v1/concurrency-limits/${name}/override)`);
  return stateOf(row);
}

/** The pool of `concurrencyKey` under the limit `name`, as of `now`; 404 when there is no such limit. */
export async function retrieveConcurrencyLimitKey(db: Queryable, environmentId: string, name: string, concurrencyKey: string, now: Date): Promise<ConcurrencyLimitKeyState> {
  const { rows } = await db.query<{ per_key: number | null; paused: boolean; key_per_key: number | null; expires_at: Date | null; running: number }>(
    `SELECT coalesce(cl.per_key_override, cl.per_key) AS per_key, cl.paused, k.per_key AS key_per_key, k.expires_at,
       (SELECT count(*)::int FROM runs r WHERE r.environment_id = $1 AND r.status = 'EXECUTING' AND r.concurrency_limits IS NOT NULL
          AND cl.name = ANY (r.concurrency_limits) AND coalesce(r.concurrency_key, '') = $3) AS running
     FROM concurrency_limits cl
     LEFT JOIN concurrency_limit_keys k ON k.environment_id = $1 AND k.name = cl.name AND k.concurrency_key = $3 AND k.expires_at > $4
     WHERE cl.environment_id = $1 AND cl.name = $2`,
    [environmentId, name, concurrencyKey, now],
  );
  const row = rows[0];
  if (!row) throw new NotFoundError(`No concurrency limit named "${name}" (set one with POST /api/v1/concurrency-limits/${name}/override)`);
  return { name, concurrencyKey, perKey: row.per_key, keyOverride: row.key_per_key, expiresAt: row.expires_at, paused: row.paused, running: row.running };
}
