import { randomBytes } from "node:crypto";
import { preparedText, type Queryable } from "../../db/queryable.ts";
import { ENV_COLUMNS, getEnvironment, KEY_PREFIXES, type Environment, type EnvironmentSlug } from "./environments.ts";
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
  return (await findSecretKey(db, key, now))?.environment ?? null;
}

/**
 * A valid secret key's environment and when the key stops working (null: until rotated), or
 * null when the key is unknown or past its rotation grace period. One round trip.
 */
export async function findSecretKey(db: Queryable, key: string, now: Date): Promise<{ environment: Environment; expiresAt: Date | null } | null> {
  const { rows } = await db.query<Environment & { keyExpiresAt: Date | null }>(preparedText(
    `SELECT ${ENV_COLUMNS}, k.expires_at AS "keyExpiresAt"
     FROM environments e JOIN projects p ON p.id = e.project_id JOIN secret_keys k ON k.environment_id = e.id
     WHERE k.key_hash = $1 AND (k.expires_at IS NULL OR k.expires_at > $2)`,
    [sha256Hex(key), now],
  ));
  const row = rows[0];
  if (!row) return null;
  const { keyExpiresAt, ...environment } = row;
  return { environment, expiresAt: keyExpiresAt };
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

/** The environment's valid secret keys (newest first) and when the first of them expires (null: none does). */
export async function activeSecretKeysWithExpiry(db: Queryable, box: SecretBox, environmentId: string, now: Date): Promise<{ keys: string[]; firstExpiry: Date | null }> {
  const { rows } = await db.query<{ key_encrypted: string; expires_at: Date | null }>(
    `SELECT key_encrypted, expires_at FROM secret_keys WHERE environment_id = $1 AND (expires_at IS NULL OR expires_at > $2)
     ORDER BY created_at DESC, id DESC`,
    [environmentId, now],
  );
  const expiries = rows.map((r) => r.expires_at).filter((d): d is Date => d !== null);
  return { keys: rows.map((r) => box.decrypt(r.key_encrypted)), firstExpiry: expiries.length > 0 ? new Date(Math.min(...expiries.map((d) => d.getTime()))) : null };
}

/** How long a rotated-out secret key keeps working unless the operator says otherwise. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;

/**
 * Rotates an environment's secret key: issues a new one and lets every currently valid older key
 * expire after `graceMs` (never extending a key that already expires sooner). Returns the new key.
 */
export async function rotateSecretKey(
  db: Queryable,
  box: SecretBox,
  env: { id: string; slug: EnvironmentSlug },
  now: Date,
  graceMs = DEFAULT_ROTATION_GRACE_MS,
): Promise<{ secretKey: string; oldKeysExpireAt: Date }> {
  const oldKeysExpireAt = new Date(now.getTime() + graceMs);
  await db.query(
    `UPDATE secret_keys SET expires_at = $2
     WHERE environment_id = $1 AND (expires_at IS NULL OR expires_at > $2)`,
    [env.id, oldKeysExpireAt],
  );
  const secretKey = await issueSecretKey(db, box, env);
  return { secretKey, oldKeysExpireAt };
}

export interface SecretKeyInfo {
  secretKey: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** Every currently valid key of an environment with its dates, newest first (`svc keys show`). */
export async function listActiveSecretKeys(db: Queryable, box: SecretBox, environmentId: string, now: Date): Promise<SecretKeyInfo[]> {
  const { rows } = await db.query<{ key_encrypted: string; created_at: Date; expires_at: Date | null }>(
    `SELECT key_encrypted, created_at, expires_at FROM secret_keys
     WHERE environment_id = $1 AND (expires_at IS NULL OR expires_at > $2)
     ORDER BY created_at DESC, id DESC`,
    [environmentId, now],
  );
  return rows.map((r) => ({ secretKey: box.decrypt(r.key_encrypted), createdAt: r.created_at, expiresAt: r.expires_at }));
}
