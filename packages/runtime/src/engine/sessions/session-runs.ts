import type { Queryable } from "../../db/queryable.ts";
import type { TriggerOptions } from "../../contracts/trigger.ts";
import type { EngineDeps } from "../deps.ts";
import { FINAL_STATUSES, type RunStatus } from "../runs/statuses.ts";
import { triggerRunInTransaction } from "../runs/trigger.ts";
import type { Environment } from "../tenancy/environments.ts";
import type { SessionRow } from "./store.ts";

/** Why a session started a run. */
export type SessionRunReason = "create" | "append" | "continue";

/** The options every run of the session is triggered with, from its triggerConfig. */
export function runOptionsOf(session: Pick<SessionRow, "trigger_config">): TriggerOptions {
  const config = session.trigger_config;
  const options: TriggerOptions = {};
  if (config.queue !== undefined) options.queue = { name: config.queue };
  if (config.tags !== undefined) options.tags = config.tags;
  if (config.maxAttempts !== undefined) options.maxAttempts = config.maxAttempts;
  if (config.maxDuration !== undefined) options.maxDuration = config.maxDuration;
  if (config.machine !== undefined) options.machine = config.machine;
  if (config.lockToVersion !== undefined) options.lockToVersion = config.lockToVersion;
  if (config.ttl !== undefined) options.ttl = config.ttl;
  return options;
}

/**
 * Starts a run of the session's task in `tx` and makes it the session's current run. Its payload
 * is `{ ...basePayload, sessionId }` (and `previousRunId` for a hand-over); its first `.in` wait
 * reads after `startAfter`. The caller holds the session row's lock.
 */
export async function startSessionRun(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  session: SessionRow,
  reason: SessionRunReason,
  startAfter: bigint | string | number,
  extraPayload: Record<string, unknown> = {},
): Promise<string> {
  const payload = { ...session.trigger_config.basePayload, ...extraPayload, sessionId: session.id };
  const { id } = await triggerRunInTransaction(deps, tx, env, session.task_identifier, payload, runOptionsOf(session));
  const now = deps.clock.now();
  await tx.query(`INSERT INTO session_runs (session_id, run_id, reason, start_after, created_at) VALUES ($1, $2, $3, $4, $5)`, [
    session.id,
    id,
    reason,
    String(startAfter),
    now,
  ]);
  await tx.query(`UPDATE sessions SET current_run_id = $2, updated_at = $3 WHERE id = $1`, [session.id, id, now]);
  return id;
}

/** Whether the session's current run is still alive (not in a final status). */
export async function currentRunIsAlive(tx: Queryable, session: Pick<SessionRow, "current_run_id">): Promise<boolean> {
  if (session.current_run_id === null) return false;
  const { rows } = await tx.query<{ status: RunStatus }>(`SELECT status FROM runs WHERE id = $1`, [session.current_run_id]);
  const status = rows[0]?.status;
  return status !== undefined && !FINAL_STATUSES.includes(status);
}

/**
 * The session's live run: its current run when that is alive, else a new run started for
 * `reason` (`started`), reading `.in` after the last record a run was handed. The caller holds
 * the row's lock.
 */
export async function ensureSessionRun(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  session: SessionRow,
  reason: SessionRunReason,
): Promise<{ runId: string; started: boolean }> {
  if (await currentRunIsAlive(tx, session)) return { runId: session.current_run_id!, started: false };
  return { runId: await startSessionRun(deps, tx, env, session, reason, session.in_delivered), started: true };
}
