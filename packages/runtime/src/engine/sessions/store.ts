import type { Queryable } from "../../db/queryable.ts";
import { SESSION_ID_PREFIX, type SessionStatus, type SessionTriggerConfig } from "../../contracts/sessions.ts";
import { NotFoundError } from "../../errors.ts";

export interface SessionRow {
  id: string;
  environment_id: string;
  external_id: string | null;
  type: string;
  task_identifier: string;
  trigger_config: SessionTriggerConfig;
  current_run_id: string | null;
  tags: string[];
  metadata: Record<string, unknown> | null;
  closed_at: Date | null;
  closed_reason: string | null;
  expires_at: Date | null;
  in_seq: string;
  out_seq: string;
  in_delivered: string;
  out_trimmed_below: string;
  created_at: Date;
  updated_at: Date;
}

/** A session's status is derived from its row and the time: CLOSED, then EXPIRED, else ACTIVE. */
export function sessionStatus(row: Pick<SessionRow, "closed_at" | "expires_at">, now: Date): SessionStatus {
  if (row.closed_at !== null) return "CLOSED";
  if (row.expires_at !== null && row.expires_at.getTime() <= now.getTime()) return "EXPIRED";
  return "ACTIVE";
}

/** How a path names a session: its own id (`session_…`) or the caller's externalId. */
export type SessionAddress = { id: string } | { externalId: string };

export function sessionAddress(ref: string): SessionAddress {
  return ref.startsWith(SESSION_ID_PREFIX) ? { id: ref } : { externalId: ref };
}

/**
 * The session a path names, in one environment; null when there is none. `lock` takes the row
 * FOR UPDATE (changes of its fields) or FOR SHARE (a wait that must not miss a concurrent append).
 */
export async function findSession(
  db: Queryable,
  environmentId: string,
  ref: string,
  lock: "" | "FOR UPDATE" | "FOR SHARE" = "",
): Promise<SessionRow | null> {
  const address = sessionAddress(ref);
  const { rows } =
    "id" in address
      ? await db.query<SessionRow>(`SELECT * FROM sessions WHERE id = $1 AND environment_id = $2 ${lock}`, [address.id, environmentId])
      : await db.query<SessionRow>(`SELECT * FROM sessions WHERE environment_id = $1 AND external_id = $2 ${lock}`, [environmentId, address.externalId]);
  return rows[0] ?? null;
}

export async function getSession(db: Queryable, environmentId: string, ref: string, lock: "" | "FOR UPDATE" | "FOR SHARE" = ""): Promise<SessionRow> {
  const row = await findSession(db, environmentId, ref, lock);
  if (!row) throw new NotFoundError("Session not found");
  return row;
}

/** The ids of the sessions these refs name (ids or externalIds) in the environments; unknown refs name none. */
export async function resolveSessionIds(db: Queryable, environmentIds: string[], refs: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM sessions WHERE environment_id = ANY($1::text[]) AND (id = ANY($2::text[]) OR external_id = ANY($2::text[]))`,
    [environmentIds, refs],
  );
  return rows.map((r) => r.id);
}
