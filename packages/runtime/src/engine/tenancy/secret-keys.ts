import { randomBytes } from "node:crypto";
import type { Queryable } from "../../db/queryable.ts";
import { getEnvironment, KEY_PREFIXES, type Environment, type EnvironmentSlug } from "./environments.ts";
import { sha256Hex, type SecretBox } from "./secret-box.ts";

export function generateSecretKey(slug: EnvironmentSlug): string {
  return KEY_PREFIXES[slug] + randomBytes(18).toString("base64url").replace(/[-_]/g, "x");
}

export function previewOf(secret: string): string {
  const prefix = secret.slice(0, secret.lastIndexOf("_") + 1);
  return `${prefix}…${secret.slice(-4)}`;
}

/** Stores a new secret key for an environment and returns it in the clear (shown once to the operator). */
export async function issueSecretKey(db: Queryable, box: SecretBox, env: { id: string; slug: EnvironmentSlug }): Promise<string> {
  const key = generateSecretKey(env.slug);
  await db.query(
    `INSERT INTO secret_keys (environment_id, key_hash, key_encrypted, key_preview) VALUES ($1, $2, $3, $4)`,
    [env.id, sha256Hex(key), box.encrypt(key), previewOf(key)],
  );
  return key;
}

/** The environment a secret key belongs to, or null when unknown or past its rotation grace period. */
export async function findEnvironmentBySecretKey(db: Queryable, key: string, now: Date): Promise<Environment | null> {
  const { rows } = await db.query<{ environment_id: string }>(
    `SELECT environment_id FROM secret_keys WHERE key_hash = $1 AND (expires_at IS NULL OR expires_at > $2)`,
    [sha256Hex(key), now],
  );
  const row = rows[0];
  return row ? getEnvironment(db, row.environment_id) : null;
}

/**
 * Every currently valid secret key of an environment, newest first, in the clear:
 * JWT verification tries each (rotation grace).
 */
export async function activeSecretKeys(db: Queryable, box: SecretBox, environmentId: string, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ key_encrypted: string }>(
    `SELECT key_encrypted FROM secret_keys WHERE environment_id = $1 AND (expires_at IS NULL OR expires_at > $2)
     ORDER BY created_at DESC, id DESC`,
    [environmentId, now],
  );
  return rows.map((r) => box.decrypt(r.key_encrypted));
}
