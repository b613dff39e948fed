import type { Queryable } from "../../db/queryable.ts";
import { IllegalTransitionError } from "../../errors.ts";
import { canTransition, sourcesOf, type RunStatus } from "./statuses.ts";

/** A runs row as the engine reads it. */
export interface RunRow {
  id: string;
  environment_id: string;
  project_id: string;
  task_identifier: string;
  status: RunStatus;
  queue_name: string;
  concurrency_key: string | null;
  /** Its trigger's rateLimit.key (migration 0047). */
  rate_limit_key?: string | null;
  /** Its trigger's rateLimit.limit and period, its own bound (migration 0055); null: none. */
  rate_limit?: number | null;
  rate_period_ms?: number | null;
  /** The named concurrency limits the run holds (migration 0048); null: none. */
  concurrency_limits?: string[] | null;
  /** The other queues the run must also fit in (migration 0049); null: none. */
  gates?: { queue: string; concurrencyKey?: string }[] | null;
  payload: string | null;
  payload_type: string;
  output: string | null;
  output_type: string | null;
  error: unknown;
  idempotency_key: string | null;
  idempotency_key_user: string | null;
  /** idempotencyKeyOptions.scope (migration 0037): run, attempt or global. */
  idempotency_key_scope: string | null;
  idempotency_key_expires_at: Date | null;
  /** options.debounce.key of a debounced run (migration 0042); while DELAYED, later triggers with it push the run back. */
  debounce_key: string | null;
  tags: string[];
  metadata: unknown;
  max_attempts: number | null;
  max_duration_s: number | null;
  ttl: string | null;
  expire_at: Date | null;
  delay_until: Date | null;
  available_at: Date | null;
  attempt_number: number;
  ledger_epoch: number;
  claim_token: string | null;
  /** W3C traceparent of the span the run's attempts are children of (null: traces off). */
  traceparent: string | null;
  /** W3C traceparent of the wait span the run last suspended on (the resumed attempt links to it). */
  wait_traceparent: string | null;
  /** Held by the execution that claimed the run (every claim gives one), renewed while it runs. */
  lease_expires_at: Date | null;
  /** Set while the run is offered to a worker that has not taken it yet (migration 0018). */
  offered_at: Date | null;
  /** An offered start (migration 0034): QUEUED again, not WAITING, when given back. */
  offered_start: boolean;
  /**
   * Set at insert (migration 0035): workers claim the run straight from `runs` (no concurrency key,
   * its queue without a concurrencyLimit then); false: it goes through a start job.
   */
  claim_from_runs: boolean;
  worker_id: string | null;
  worker_version: string | null;
  /** Raised when an execution suspends the run and when a completion resolves its entries (migration 0027). */
  ledger_version: number;
  /** The worker whose execution last suspended the run (migration 0027): offers prefer it. */
  suspended_worker_id: string | null;
  parent_run_id: string | null;
  /** The ledger epoch whose metadata operations metadata_ops counts (migration 0041). */
  metadata_ops_epoch: number | null;
  /** How many metadata operations of that epoch the run's metadata has (ledger/run-metadata.ts). */
  metadata_ops: number | null;
  root_run_id: string | null;
  depth: number;
  trigger_function: string;
  /** Someone waits on this run although it was not triggered to be waited on (see attachWaiter). */
  awaited: boolean;
  batch_id: string | null;
  batch_index: number | null;
  schedule_id: string | null;
  is_test: boolean;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  expired_at: Date | null;
}

export async function getRun(db: Queryable, id: string, environmentId?: string): Promise<RunRow | null> {
  const { rows } = environmentId
    ? await db.query<RunRow>(`SELECT * FROM runs WHERE id = $1 AND environment_id = $2`, [id, environmentId])
    : await db.query<RunRow>(`SELECT * FROM runs WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export type TransitionResult = { changed: true; run: RunRow } | { changed: false };

/**
 * The guarded update every status change goes through:
 * `UPDATE runs SET status = $to … WHERE id = $id AND status = ANY($from)`.
 * `from` defaults to every status the table allows into `to`; `extraWhere` adds fencing
 * (e.g. the claim token). Zero rows means someone else changed the run first: `{ changed: false }`.
 */
export async function transitionRun(
  db: Queryable,
  id: string,
  to: RunStatus,
  now: Date,
  options: { from?: RunStatus[]; set?: Record<string, unknown>; extraWhere?: { sql: string; values: unknown[] } } = {},
): Promise<TransitionResult> {
  const from = options.from ?? sourcesOf(to);
  for (const status of from) if (!canTransition(status, to)) throw new IllegalTransitionError(status, to);
  const values: unknown[] = [id, to, from, now];
  const sets = ["status = $2", "updated_at = $4"];
  for (const [column, value] of Object.entries(options.set ?? {})) {
    if (!/^[a-z_]+$/.test(column)) throw new Error(`bad column ${column}`);
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  }
  let where = "id = $1 AND status = ANY($3::text[])";
  if (options.extraWhere) {
    const offset = values.length;
    where += " AND " + options.extraWhere.sql.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + offset}`);
    values.push(...options.extraWhere.values);
  }
  const { rows } = await db.query<RunRow>(`UPDATE runs SET ${sets.join(", ")} WHERE ${where} RETURNING *`, values);
  return rows[0] ? { changed: true, run: rows[0] } : { changed: false };
}
