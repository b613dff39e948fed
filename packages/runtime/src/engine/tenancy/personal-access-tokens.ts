import { randomBytes } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { ValidationError } from "../../errors.ts";
import { sha256Hex } from "./secret-box.ts";
import { previewOf } from "./secret-keys.ts";

export const PAT_PREFIX = "svc_pat_";

export function generatePersonalAccessToken(): string {
  return PAT_PREFIX + randomBytes(24).toString("base64url").replace(/[-_]/g, "x");
}

export interface PersonalAccessTokenSummary {
  id: number;
  name: string;
  preview: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/**
 * Issues a PAT for a user and returns it in the clear, once: only its SHA-256 is stored, since
 * nothing ever needs a PAT back (unlike secret keys, PATs do not sign JWTs).
 */
export async function createPersonalAccessToken(db: Queryable, userId: string, name: string): Promise<{ token: string; summary: PersonalAccessTokenSummary }> {
  const trimmed = name.trim();
  if (!trimmed) throw new ValidationError("A personal access token needs a name");
  const token = generatePersonalAccessToken();
  const { rows } = await db.query<PersonalAccessTokenSummary>(
    `INSERT INTO personal_access_tokens (user_id, name, token_hash, token_preview) VALUES ($1, $2, $3, $4)
     RETURNING id, name, token_preview AS preview, created_at AS "createdAt", revoked_at AS "revokedAt"`,
    [userId, trimmed, sha256Hex(token), previewOf(token)],
  );
  return { token, summary: rows[0]! };
}

/** The user a PAT belongs to, or null when the token is unknown or revoked. */
export async function findUserIdByPersonalAccessToken(db: Queryable, token: string): Promise<string | null> {
  const { rows } = await db.query<{ user_id: string }>(
    `SELECT user_id FROM personal_access_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
    [sha256Hex(token)],
  );
  return rows[0]?.user_id ?? null;
}

/** A user's tokens, oldest first, revoked ones included (never the token itself: only its preview). */
export async function listPersonalAccessTokens(db: Queryable, userId: string): Promise<PersonalAccessTokenSummary[]> {
  const { rows } = await db.query<PersonalAccessTokenSummary>(
    `SELECT id, name, token_preview AS preview, created_at AS "createdAt", revoked_at AS "revokedAt"
     FROM personal_access_tokens WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );
  return rows;
}

/** Revokes a token; `{ changed: false }` when it was already revoked or does not belong to the user. */
export async function revokePersonalAccessToken(db: Queryable, userId: string, id: number, now: Date): Promise<{ changed: boolean }> {
  const { rowCount } = await db.query(
    `UPDATE personal_access_tokens SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`,
    [id, userId, now],
  );
  return { changed: (rowCount ?? 0) > 0 };
}
