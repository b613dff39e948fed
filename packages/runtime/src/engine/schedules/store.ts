import type { Queryable } from "../../db/queryable.ts";
import { CHANNELS } from "../channels.ts";

/** SQL for schedules and their fired ticks; one function per statement. */

export const SCHEDULE_TYPES = ["IMPERATIVE", "DECLARATIVE"] as const;
export type ScheduleType = (typeof SCHEDULE_TYPES)[number];

export interface ScheduleRow {
  id: string;
  environment_id: string;
  type: ScheduleType;
  task_identifier: string;
  cron: string;
  timezone: string;
  deduplication_key: string | null;
  external_id: string | null;
  active: boolean;
  next_run_at: Date;
  last_tick_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What an imperative create/update sets. */
export interface ScheduleDefinition {
  task: string;
  cron: string;
  timezone: string;
  externalId: string | null;
}

/**
 * Inserts an imperative schedule, or, when `deduplicationKey` is already used in the environment,
 * updates that schedule (task, cron, timezone, externalId). `next_run_at` is only replaced when the
 * cron or timezone changed, so an upsert that repeats the definition does not move a due tick.
 */
export async function upsertImperativeSchedule(
  db: Queryable,
  row: { id: string; environmentId: string; deduplicationKey: string | null; nextRunAt: Date; now: Date } & ScheduleDefinition,
): Promise<{ schedule: ScheduleRow; created: boolean }> {
  const { rows } = await db.query<ScheduleRow & { inserted: boolean }>(
    `INSERT INTO schedules (id, environment_id, type, task_identifier, cron, timezone, deduplication_key, external_id,
       active, next_run_at, created_at, updated_at)
     VALUES ($1, $2, 'IMPERATIVE', $3, $4, $5, $6, $7, true, $8, $9, $9)
     ON CONFLICT (environment_id, deduplication_key) WHERE deduplication_key IS NOT NULL DO UPDATE SET
       task_identifier = EXCLUDED.task_identifier,
       cron = EXCLUDED.cron,
       timezone = EXCLUDED.timezone,
       external_id = EXCLUDED.external_id,
       next_run_at = CASE WHEN schedules.cron = EXCLUDED.cron AND schedules.timezone = EXCLUDED.timezone
                          THEN schedules.next_run_at ELSE EXCLUDED.next_run_at END,
       updated_at = EXCLUDED.updated_at
     RETURNING *, (xmax = 0) AS inserted`,
    [row.id, row.environmentId, row.task, row.cron, row.timezone, row.deduplicationKey, row.externalId, row.nextRunAt, row.now],
  );
  const { inserted, ...schedule } = rows[0]!;
  return { schedule, created: inserted };
}

/**
 * The environment's schedule whose id, or else user-provided deduplication key, is `idOrKey`.
 * `forUpdate` locks it for the caller's transaction.
 */
export async function findSchedule(db: Queryable, environmentId: string, idOrKey: string, forUpdate = false): Promise<ScheduleRow | null> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE environment_id = $1 AND (id = $2 OR deduplication_key = $2)
     ORDER BY (id = $2) DESC LIMIT 1 ${forUpdate ? "FOR UPDATE" : ""}`,
    [environmentId, idOrKey],
  );
  return rows[0] ?? null;
}

export async function updateScheduleDefinition(db: Queryable, id: string, def: ScheduleDefinition, nextRunAt: Date, now: Date): Promise<ScheduleRow> {
  const { rows } = await db.query<ScheduleRow>(
    `UPDATE schedules SET task_identifier = $2, cron = $3, timezone = $4, external_id = $5, next_run_at = $6, updated_at = $7
     WHERE id = $1 RETURNING *`,
    [id, def.task, def.cron, def.timezone, def.externalId, nextRunAt, now],
  );
  return rows[0]!;
}

/** Guarded: changes nothing (returns null) when the schedule already has that state. */
export async function setScheduleActive(db: Queryable, id: string, active: boolean, nextRunAt: Date, now: Date): Promise<ScheduleRow | null> {
  const { rows } = await db.query<ScheduleRow>(
    `UPDATE schedules SET active = $2, next_run_at = $3, updated_at = $4 WHERE id = $1 AND active <> $2 RETURNING *`,
    [id, active, nextRunAt, now],
  );
  return rows[0] ?? null;
}

export async function deleteScheduleRow(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM schedules WHERE id = $1`, [id]);
  return (rowCount ?? 0) > 0;
}

export async function countSchedules(db: Queryable, environmentId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE environment_id = $1`, [environmentId]);
  return rows[0]!.n;
}

/** One offset page, newest first. */
export async function listScheduleRows(db: Queryable, environmentId: string, limit: number, offset: number): Promise<ScheduleRow[]> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE environment_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [environmentId, limit, offset],
  );
  return rows;
}

/** The environment's DECLARATIVE schedules. */
export async function listDeclarativeSchedules(db: Queryable, environmentId: string): Promise<ScheduleRow[]> {
  const { rows } = await db.query<ScheduleRow>(`SELECT * FROM schedules WHERE environment_id = $1 AND type = 'DECLARATIVE'`, [environmentId]);
  return rows;
}

/** Creates or redefines the DECLARATIVE schedule of a task; `next_run_at` moves only when cron or timezone changed. */
export async function upsertDeclarativeSchedule(
  db: Queryable,
  row: { id: string; environmentId: string; task: string; cron: string; timezone: string; nextRunAt: Date; now: Date },
): Promise<ScheduleRow> {
  const { rows } = await db.query<ScheduleRow>(
    `INSERT INTO schedules (id, environment_id, type, task_identifier, cron, timezone, active, next_run_at, created_at, updated_at)
     VALUES ($1, $2, 'DECLARATIVE', $3, $4, $5, true, $6, $7, $7)
     ON CONFLICT (environment_id, task_identifier) WHERE type = 'DECLARATIVE' DO UPDATE SET
       cron = EXCLUDED.cron,
       timezone = EXCLUDED.timezone,
       next_run_at = CASE WHEN schedules.cron = EXCLUDED.cron AND schedules.timezone = EXCLUDED.timezone
                          THEN schedules.next_run_at ELSE EXCLUDED.next_run_at END,
       updated_at = CASE WHEN schedules.cron = EXCLUDED.cron AND schedules.timezone = EXCLUDED.timezone
                         THEN schedules.updated_at ELSE EXCLUDED.updated_at END
     RETURNING *`,
    [row.id, row.environmentId, row.task, row.cron, row.timezone, row.nextRunAt, row.now],
  );
  return rows[0]!;
}

/** Deletes the environment's DECLARATIVE schedules whose task is not in `keepTasks`; returns their ids. */
export async function deleteDeclarativeSchedulesExcept(db: Queryable, environmentId: string, keepTasks: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `DELETE FROM schedules WHERE environment_id = $1 AND type = 'DECLARATIVE' AND NOT (task_identifier = ANY($2::text[])) RETURNING id`,
    [environmentId, keepTasks],
  );
  return rows.map((r) => r.id);
}

/** Claims one due, active schedule for the caller's transaction; other processes skip it. */
export async function claimDueSchedule(db: Queryable, now: Date): Promise<ScheduleRow | null> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT * FROM schedules WHERE active AND next_run_at <= $1 ORDER BY next_run_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
    [now],
  );
  return rows[0] ?? null;
}

/** Records that `tick` fired; false when it already had (the caller must not trigger again). */
export async function recordTick(db: Queryable, scheduleId: string, tick: Date, firedAt: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO schedule_ticks (schedule_id, tick_at, fired_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [scheduleId, tick, firedAt],
  );
  return (rowCount ?? 0) > 0;
}

export async function setTickRun(db: Queryable, scheduleId: string, tick: Date, runId: string): Promise<void> {
  await db.query(`UPDATE schedule_ticks SET run_id = $3 WHERE schedule_id = $1 AND tick_at = $2`, [scheduleId, tick, runId]);
}

/**
 * Moves a schedule past a tick. Guarded on the `next_run_at` the caller claimed: zero rows means
 * someone else already advanced it (`{ changed: false }`).
 */
export async function advanceSchedule(
  db: Queryable,
  id: string,
  claimedNextRunAt: Date,
  nextRunAt: Date,
  lastTickAt: Date | null,
): Promise<{ changed: boolean }> {
  const { rowCount } = await db.query(
    `UPDATE schedules SET next_run_at = $3, last_tick_at = COALESCE($4, last_tick_at)
     WHERE id = $1 AND next_run_at = $2 AND active`,
    [id, claimedNextRunAt, nextRunAt, lastTickAt],
  );
  return { changed: (rowCount ?? 0) > 0 };
}

/** The earliest next run of an active schedule (a DueWork's nextDueSql). */
export const EARLIEST_NEXT_RUN_SQL = `SELECT min(next_run_at) AS at FROM schedules WHERE active`;

/** The task as a worker of the environment registered it, or null. */
export async function findRegisteredTask(db: Queryable, environmentId: string, taskIdentifier: string): Promise<{ kind: string } | null> {
  const { rows } = await db.query<{ kind: string }>(
    `SELECT kind FROM worker_tasks WHERE environment_id = $1 AND task_identifier = $2`,
    [environmentId, taskIdentifier],
  );
  return rows[0] ?? null;
}

/** Tells timer loops in other processes to re-plan (a schedule's next tick may now be earlier). Sent on commit. */
export async function notifyTimers(db: Queryable, nextRunAt: Date): Promise<void> {
  await db.query(`SELECT pg_notify($1, $2)`, [CHANNELS.timers, nextRunAt.toISOString()]);
}
