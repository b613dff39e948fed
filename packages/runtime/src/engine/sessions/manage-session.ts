import { withTransaction, type Queryable } from "../../db/queryable.ts";
import type { CloseSessionRequestBody, EndAndContinueSessionRequestBody, UpdateSessionRequestBody } from "../../contracts/sessions.ts";
import { NotFoundError, UnprocessableError, ValidationError } from "../../errors.ts";
import type { EngineDeps } from "../deps.ts";
import type { Environment } from "../tenancy/environments.ts";
import { endWaitsOfClosedSession } from "./channel-waits.ts";
import { currentRunIsAlive, startSessionRun } from "./session-runs.ts";
import { getSession, sessionStatus, type SessionRow } from "./store.ts";

/**
 * Changes a session's tags (replaced) and metadata (`null` clears it). The externalId cannot
 * change: sending another value (or null when it has one) is UnprocessableError (422); sending
 * the same value changes nothing.
 */
export async function updateSession(deps: EngineDeps, env: Environment, ref: string, body: UpdateSessionRequestBody): Promise<SessionRow> {
  return withTransaction(deps.db, async (tx) => {
    const session = await getSession(tx, env.id, ref, "FOR UPDATE");
    if (body.externalId !== undefined && body.externalId !== session.external_id) {
      throw new UnprocessableError("externalId cannot be changed once a session exists");
    }
    if (body.tags === undefined && body.metadata === undefined) return session;
    const { rows } = await tx.query<SessionRow>(
      `UPDATE sessions SET tags = coalesce($2, tags), metadata = CASE WHEN $3 THEN $4::jsonb ELSE metadata END, updated_at = $5
       WHERE id = $1 RETURNING *`,
      [
        session.id,
        body.tags === undefined ? null : [...new Set(body.tags.map((t) => t.trim()).filter((t) => t.length > 0))],
        body.metadata !== undefined,
        body.metadata === undefined || body.metadata === null ? null : JSON.stringify(body.metadata),
        deps.clock.now(),
      ],
    );
    return rows[0]!;
  });
}

/**
 * Closes a session: it refuses appends from now on and stays readable. Runs waiting on its
 * channels wake with SESSION_CLOSED_ERROR. Closing a closed session returns it unchanged.
 */
export async function closeSession(deps: EngineDeps, env: Environment, ref: string, body: CloseSessionRequestBody): Promise<SessionRow> {
  return withTransaction(deps.db, async (tx) => {
    const session = await getSession(tx, env.id, ref, "FOR UPDATE");
    if (session.closed_at !== null) return session;
    const now = deps.clock.now();
    const { rows } = await tx.query<SessionRow>(
      `UPDATE sessions SET closed_at = $2, closed_reason = $3, updated_at = $2 WHERE id = $1 AND closed_at IS NULL RETURNING *`,
      [session.id, now, body.reason ?? null],
    );
    await endWaitsOfClosedSession(deps, tx, session.id);
    return rows[0]!;
  });
}

/**
 * Hands the session over from `callingRunId` to a new run of its task (payload with
 * `previousRunId` and `continuation: true`), which reads `.in` after the last record a run was
 * handed. When another run already took over and is alive, nothing starts: `swapped: false`.
 */
export async function endAndContinueSession(
  deps: EngineDeps,
  env: Environment,
  ref: string,
  body: EndAndContinueSessionRequestBody,
): Promise<{ runId: string; swapped: boolean }> {
  return withTransaction(deps.db, (tx) => endAndContinueInTransaction(deps, tx, env, ref, body));
}

/** endAndContinueSession in the caller's transaction (a run records the hand-over with it). */
export async function endAndContinueInTransaction(
  deps: Pick<EngineDeps, "clock" | "dispatcher">,
  tx: Queryable,
  env: Environment,
  ref: string,
  body: EndAndContinueSessionRequestBody,
): Promise<{ runId: string; swapped: boolean }> {
  {
    const session = await getSession(tx, env.id, ref, "FOR UPDATE");
    const status = sessionStatus(session, deps.clock.now());
    if (status !== "ACTIVE") throw new ValidationError(`Cannot continue a ${status === "CLOSED" ? "closed" : "expired"} session`);
    const { rows } = await tx.query(`SELECT 1 FROM runs WHERE id = $1 AND environment_id = $2`, [body.callingRunId, env.id]);
    if (rows.length === 0) throw new NotFoundError(`Run ${body.callingRunId} not found`);
    if (session.current_run_id !== body.callingRunId && (await currentRunIsAlive(tx, session))) {
      return { runId: session.current_run_id!, swapped: false };
    }
    const runId = await startSessionRun(deps, tx, env, session, "continue", session.in_delivered, {
      previousRunId: body.callingRunId,
      continuation: true,
    });
    return { runId, swapped: true };
  }
}
