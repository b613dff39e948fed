import type { Queryable } from "../../db/queryable.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import { debounceWindow, type Debounce } from "./debounce-window.ts";
import type { RunPlan } from "./plan-run.ts";
import type { RunRow } from "./store.ts";

// Debounced triggers, as Trigger.dev (≥ 4.3) has them: `options.debounce { key, delay, mode, maxDelay }`.
// - The first trigger with a key (per environment and task) creates a run DELAYED by `delay`.
// - A later trigger with the key while that run is still DELAYED pushes its start to now + delay
//   (never earlier than it was) and returns the same run; in "trailing" mode it also replaces the
//   run's payload, and its metadata, tags, maxAttempts and maxDuration when given.
// - With `maxDelay`, a push that would start the run later than `maxDelay` after it was created is
//   not made: the run keeps its time and the trigger creates a new debounced run, which now holds
//   the key. Without it there is no limit.
// - Once the run has started (left DELAYED), the next trigger creates a new debounced run.
// Concurrency: a transaction-level advisory lock on (environment, task, key) serializes the
// triggers of one key, and the partial unique index of migration 0042 (one DELAYED run per key)
// backs it. The firing of a delayed run locks its row, as the push here does (reschedule.ts says
// what that relies on), so a push and a firing never interleave.

/**
 * Locks the debounce key of `plan` for the rest of the transaction and returns the pending run
 * that holds it, pushed back (and updated in trailing mode), or null when the trigger must create
 * a new run (none pending, or its maxDelay window is closed: its key is then cleared).
 */
export async function pushPendingDebouncedRun(tx: Queryable, environmentId: string, plan: RunPlan, debounce: Debounce, options: TriggerOptions, now: Date): Promise<RunRow | null> {
  const { delayMs, maxDelayMs } = debounceWindow(debounce);
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`debounce\u0001${environmentId}\u0001${plan.taskIdentifier}\u0001${debounce.key}`]);
  const { rows } = await tx.query<RunRow>(
    `SELECT * FROM runs WHERE environment_id = $1 AND task_identifier = $2 AND debounce_key = $3 AND status = 'DELAYED' FOR UPDATE`,
    [environmentId, plan.taskIdentifier, debounce.key],
  );
  const pending = rows[0];
  if (!pending) return null;
  const until = new Date(now.getTime() + delayMs);
  if (maxDelayMs !== null && until.getTime() > pending.created_at.getTime() + maxDelayMs) {
    await tx.query(`UPDATE runs SET debounce_key = NULL, updated_at = $3 WHERE id = $1 AND environment_id = $2 AND status = 'DELAYED'`, [pending.id, environmentId, now]);
    return null;
  }
  const trailing = debounce.mode === "trailing";
  const { rows: pushed } = await tx.query<RunRow>(
    `UPDATE runs SET
       delay_until = greatest(delay_until, $3::timestamptz),
       expire_at = CASE WHEN expire_at IS NULL THEN NULL ELSE greatest(delay_until, $3::timestamptz) + (expire_at - delay_until) END,
       payload = CASE WHEN $5 THEN $6 ELSE payload END,
       payload_type = CASE WHEN $5 THEN $7 ELSE payload_type END,
       metadata = CASE WHEN $5 AND $8::text IS NOT NULL THEN $8::jsonb ELSE metadata END,
       tags = CASE WHEN $5 AND $9::text[] IS NOT NULL THEN $9::text[] ELSE tags END,
       max_attempts = CASE WHEN $5 AND $10::int IS NOT NULL THEN $10::int ELSE max_attempts END,
       max_duration_s = CASE WHEN $5 AND $11::int IS NOT NULL THEN $11::int ELSE max_duration_s END,
       updated_at = $4
     WHERE id = $1 AND environment_id = $2 AND status = 'DELAYED'
     RETURNING *`,
    [
      pending.id,
      environmentId,
      until,
      now,
      trailing,
      plan.packet.data,
      plan.packet.type,
      plan.metadata,
      options.tags !== undefined ? plan.tags : null,
      plan.maxAttempts,
      plan.maxDurationS,
    ],
  );
  const run = pushed[0]!;
  if (trailing && options.tags !== undefined) {
    // The run list's tag index (run_tags) follows the replaced tags.
    await tx.query(`DELETE FROM run_tags WHERE environment_id = $1 AND run_id = $2 AND NOT (tag = ANY($3::text[]))`, [environmentId, run.id, plan.tags]);
    await tx.query(
      `INSERT INTO run_tags (environment_id, tag, created_at, run_id) SELECT $1, tag, $2, $3 FROM unnest($4::text[]) AS t(tag) ON CONFLICT DO NOTHING`,
      [environmentId, run.created_at, run.id, plan.tags],
    );
  }
  return run;
}

/** Gives newly inserted debounced runs their keys (in the transaction holding the keys' locks). */
export async function setDebounceKeys(tx: Queryable, environmentId: string, runs: { id: string; key: string }[]): Promise<void> {
  if (runs.length === 0) return;
  await tx.query(
    `UPDATE runs r SET debounce_key = k.key FROM unnest($2::text[], $3::text[]) AS k(id, key) WHERE r.id = k.id AND r.environment_id = $1`,
    [environmentId, runs.map((r) => r.id), runs.map((r) => r.key)],
  );
}
