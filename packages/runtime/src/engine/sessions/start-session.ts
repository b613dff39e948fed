import { withTransaction } from "../../db/queryable.ts";
import type { CreateSessionRequestBody } from "../../contracts/sessions.ts";
import { ConflictError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { ensureSessionRun, startSessionRun } from "./session-runs.ts";
import { findSession, sessionStatus, type SessionRow } from "./store.ts";

export interface StartSessionResult {
  session: SessionRow;
  runId: string;
  /** True when an open session with the externalId already existed. */
  isCached: boolean;
  /** Whether this call started `runId`: a new session's first run, or a cached session's next one when its run had ended. */
  runStarted: boolean;
}

function uniqueTags(tags: string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter((t) => t.length > 0))];
}

/**
 * Creates a session and its first run in one transaction. With an externalId that an open
 * session already has, returns that session (its triggerConfig replaced by this one, its tags and
 * metadata kept) and its live run, starting one when its run has ended. A closed or expired
 * session keeps its externalId: ConflictError (409).
 */
export async function startSession(deps: EngineDeps, env: Environment, body: CreateSessionRequestBody): Promise<StartSessionResult> {
  const created = deps.clock.now();
  if (body.expiresAt !== undefined && body.expiresAt.getTime() <= created.getTime()) {
    throw new ValidationError(`expiresAt: ${body.expiresAt.toISOString()} has passed; a session must be able to live`);
  }
  return withTransaction(deps.db, async (tx) => {
    const now = deps.clock.now();
    // Two rounds at most: the second only after a concurrent create took the externalId first.
    for (let round = 0; round < 2; round++) {
      if (body.externalId !== undefined) {
        const existing = await findSession(tx, env.id, body.externalId, "FOR UPDATE");
        if (existing) {
          const status = sessionStatus(existing, now);
          if (status !== "ACTIVE") {
            throw new ConflictError(`Session is ${status === "CLOSED" ? "closed" : "expired"}; use a different externalId to start a new session`);
          }
          const { rows } = await tx.query<SessionRow>(
            `UPDATE sessions SET trigger_config = $2, updated_at = $3 WHERE id = $1 RETURNING *`,
            [existing.id, JSON.stringify(body.triggerConfig), now],
          );
          const { runId, started } = await ensureSessionRun(deps, tx, env, rows[0]!, "create");
          return { session: { ...rows[0]!, current_run_id: runId }, runId, isCached: true, runStarted: started };
        }
      }
      const { rows } = await tx.query<SessionRow>(
        `INSERT INTO sessions (id, environment_id, external_id, type, task_identifier, trigger_config, tags, metadata, expires_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
         ON CONFLICT (environment_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING *`,
        [
          newId.session(),
          env.id,
          body.externalId ?? null,
          body.type,
          body.taskIdentifier,
          JSON.stringify(body.triggerConfig),
          uniqueTags(body.tags),
          body.metadata === undefined ? null : JSON.stringify(body.metadata),
          body.expiresAt ?? null,
          now,
        ],
      );
      const created = rows[0];
      if (!created) continue;
      const runId = await startSessionRun(deps, tx, env, created, "create", 0);
      return { session: { ...created, current_run_id: runId }, runId, isCached: false, runStarted: true };
    }
    throw new Error("session create conflicted on its externalId twice");
  });
}
