import { withTransaction } from "../../db/queryable.ts";
import { NotFoundError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import { SCHEDULE_PAGE_DEFAULT, SCHEDULE_PAGE_MAX } from "../../contracts/schedules.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { nextTick } from "./cron.ts";
import {
  countSchedules,
  deleteScheduleRow,
  findSchedule,
  listScheduleRows,
  notifyTimers,
  setScheduleActive,
  updateScheduleDefinition,
  upsertImperativeSchedule,
  type ScheduleRow,
} from "./store.ts";
import { assertImperative, validateScheduleInput, type ScheduleInput } from "./validate.ts";

/** Imperative schedules: what the /api/v1/schedules routes call. Every function is scoped to `env`. */

type Deps = Pick<EngineDeps, "db" | "clock">;

export interface CreateScheduleInput extends ScheduleInput {
  /** Upsert key within the environment; `{id}` in paths may be this. */
  deduplicationKey?: string | null;
}

/** Creates a schedule, or updates the one holding `deduplicationKey`. */
export async function createSchedule(deps: Deps, env: Environment, input: CreateScheduleInput): Promise<{ schedule: ScheduleRow; created: boolean }> {
  return withTransaction(deps.db, async (tx) => {
    const def = await validateScheduleInput(tx, env.id, input);
    const now = deps.clock.now();
    const result = await upsertImperativeSchedule(tx, {
      ...def,
      id: newId.schedule(),
      environmentId: env.id,
      deduplicationKey: input.deduplicationKey ?? null,
      nextRunAt: nextTick(def.cron, def.timezone, now),
      now,
    });
    if (result.schedule.active) await notifyTimers(tx, result.schedule.next_run_at);
    return result;
  });
}

/** The environment's schedule by id or deduplicationKey; 404 otherwise (including other environments'). */
export async function getSchedule(deps: Deps, env: Environment, idOrKey: string): Promise<ScheduleRow> {
  return (await findSchedule(deps.db, env.id, idOrKey)) ?? notFound();
}

/** Replaces task, cron, timezone and externalId. The next tick moves only if cron or timezone changed. */
export async function updateSchedule(deps: Deps, env: Environment, idOrKey: string, input: ScheduleInput): Promise<ScheduleRow> {
  return withTransaction(deps.db, async (tx) => {
    const existing = (await findSchedule(tx, env.id, idOrKey, true)) ?? notFound();
    assertImperative(existing, "update");
    const def = await validateScheduleInput(tx, env.id, input);
    const now = deps.clock.now();
    const unchanged = existing.cron === def.cron && existing.timezone === def.timezone;
    const nextRunAt = unchanged ? existing.next_run_at : nextTick(def.cron, def.timezone, now);
    const row = await updateScheduleDefinition(tx, existing.id, def, nextRunAt, now);
    if (row.active && !unchanged) await notifyTimers(tx, row.next_run_at);
    return row;
  });
}

/**
 * Turns a schedule on or off. Re-activating starts from the next tick after now: ticks that
 * passed while it was inactive never fire. Repeating the current state changes nothing.
 */
export async function setScheduleActivation(deps: Deps, env: Environment, idOrKey: string, active: boolean): Promise<ScheduleRow> {
  return withTransaction(deps.db, async (tx) => {
    const existing = (await findSchedule(tx, env.id, idOrKey, true)) ?? notFound();
    assertImperative(existing, active ? "activate" : "deactivate");
    if (existing.active === active) return existing;
    const now = deps.clock.now();
    const nextRunAt = active ? nextTick(existing.cron, existing.timezone, now) : existing.next_run_at;
    const row = (await setScheduleActive(tx, existing.id, active, nextRunAt, now)) ?? existing;
    if (row.active) await notifyTimers(tx, row.next_run_at);
    return row;
  });
}

/** Deletes a schedule; its runs stay (they keep their schedule id). */
export async function deleteSchedule(deps: Deps, env: Environment, idOrKey: string): Promise<{ id: string }> {
  return withTransaction(deps.db, async (tx) => {
    const existing = (await findSchedule(tx, env.id, idOrKey, true)) ?? notFound();
    assertImperative(existing, "delete");
    await deleteScheduleRow(tx, existing.id);
    return { id: existing.id };
  });
}

export interface SchedulePage {
  rows: ScheduleRow[];
  currentPage: number;
  totalPages: number;
  count: number;
}

/** Offset page of the environment's schedules, newest first (both kinds). */
export async function listSchedules(deps: Deps, env: Environment, options: { page?: number; perPage?: number } = {}): Promise<SchedulePage> {
  const perPage = Math.min(options.perPage ?? SCHEDULE_PAGE_DEFAULT, SCHEDULE_PAGE_MAX);
  const page = options.page ?? 1;
  const count = await countSchedules(deps.db, env.id);
  const rows = await listScheduleRows(deps.db, env.id, perPage, (page - 1) * perPage);
  return { rows, currentPage: page, totalPages: Math.ceil(count / perPage), count };
}

function notFound(): never {
  throw new NotFoundError("Schedule not found");
}
