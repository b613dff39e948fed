import { randomBytes } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { sha256Hex } from "./secret-box.ts";

/** How long a dashboard sign-in lasts (sign-out or revoking its PAT ends it sooner). */
export const DASHBOARD_SESSION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

export interface DashboardSession {
  userId: string;
  userEmail: string;
  /** Every state-changing dashboard request must carry it (form field `_csrf`). */
  csrfToken: string;
  expiresAt: Date;
}

function randomToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Signs a browser in with a personal access token: null when the PAT is unknown or revoked; else
 * a new session whose token (returned in the clear once, for the cookie) is stored as a SHA-256.
 * Sessions past their expiry are removed on the way (cheap: indexed, and sign-ins are rare).
 */
export async function createDashboardSession(db: Queryable, personalAccessToken: string, now: Date): Promise<{ token: string; session: DashboardSession } | null> {
  await db.query(`DELETE FROM dashboard_sessions WHERE expires_at <= $1`, [now]);
  const token = randomToken();
  const csrfToken = randomToken();
  const expiresAt = new Date(now.getTime() + DASHBOARD_SESSION_LIFETIME_MS);
  const { rows } = await db.query<{ user_id: string; email: string }>(
    `WITH pat AS (SELECT id, user_id FROM personal_access_tokens WHERE token_hash = $1 AND revoked_at IS NULL),
          made AS (INSERT INTO dashboard_sessions (token_hash, user_id, personal_access_token_id, csrf_token, created_at, expires_at)
                   SELECT $2, user_id, id, $3, $4, $5 FROM pat RETURNING user_id)
     SELECT made.user_id, u.email FROM made JOIN users u ON u.id = made.user_id`,
    [sha256Hex(personalAccessToken), sha256Hex(token), csrfToken, now, expiresAt],
  );
  const row = rows[0];
  if (!row) return null;
  return { token, session: { userId: row.user_id, userEmail: row.email, csrfToken, expiresAt } };
}

/** The live session a cookie's token names: not expired, and its PAT not revoked. Null otherwise. */
export async function findDashboardSession(db: Queryable, token: string, now: Date): Promise<DashboardSession | null> {
  const { rows } = await db.query<DashboardSession>(
    `SELECT s.user_id AS "userId", u.email AS "userEmail", s.csrf_token AS "csrfToken", s.expires_at AS "expiresAt"
       FROM dashboard_sessions s
       JOIN personal_access_tokens pat ON pat.id = s.personal_access_token_id AND pat.revoked_at IS NULL
       JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND s.expires_at > $2`,
    [sha256Hex(token), now],
  );
  return rows[0] ?? null;
}

/** Signs out: the session's row is deleted (`{ changed: false }` when there was none). */
export async function deleteDashboardSession(db: Queryable, token: string): Promise<{ changed: boolean }> {
  const { rowCount } = await db.query(`DELETE FROM dashboard_sessions WHERE token_hash = $1`, [sha256Hex(token)]);
  return { changed: (rowCount ?? 0) > 0 };
}
