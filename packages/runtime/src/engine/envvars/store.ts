import type { Queryable } from "../../db/queryable.ts";

/** An environment variable row as stored: the value is still sealed (SecretBox). */
export interface StoredVariable {
  name: string;
  valueEncrypted: string;
  isSecret: boolean;
}

const SELECT = `SELECT name, value_encrypted AS "valueEncrypted", is_secret AS "isSecret" FROM environment_variables`;

export async function selectVariables(db: Queryable, environmentId: string): Promise<StoredVariable[]> {
  const { rows } = await db.query<StoredVariable>(`${SELECT} WHERE environment_id = $1 ORDER BY name`, [environmentId]);
  return rows;
}

export async function selectVariable(db: Queryable, environmentId: string, name: string): Promise<StoredVariable | null> {
  const { rows } = await db.query<StoredVariable>(`${SELECT} WHERE environment_id = $1 AND name = $2`, [environmentId, name]);
  return rows[0] ?? null;
}

/** Names among `names` that the environment already has. */
export async function selectExistingNames(db: Queryable, environmentId: string, names: string[]): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM environment_variables WHERE environment_id = $1 AND name = ANY($2::text[]) ORDER BY name`,
    [environmentId, names],
  );
  return rows.map((r) => r.name);
}

/**
 * Writes variables in one statement and returns the names it wrote. With `override` an existing
 * name is replaced; without it an existing name is left alone (and missing from the result).
 * `isSecret` null keeps the flag an existing row has (false for a new one): overriding a secret's
 * value does not quietly make it readable.
 */
export async function writeVariables(
  db: Queryable,
  environmentId: string,
  rows: { name: string; valueEncrypted: string }[],
  options: { isSecret: boolean | null; override: boolean },
  now: Date,
): Promise<string[]> {
  const onConflict = options.override
    ? `DO UPDATE SET value_encrypted = EXCLUDED.value_encrypted,
         is_secret = COALESCE($4, environment_variables.is_secret),
         updated_at = EXCLUDED.updated_at`
    : "DO NOTHING";
  const result = await db.query<{ name: string }>(
    `INSERT INTO environment_variables (environment_id, name, value_encrypted, is_secret, created_at, updated_at)
     SELECT $1, t.name, t.value, COALESCE($4::boolean, false), $5, $5 FROM unnest($2::text[], $3::text[]) AS t(name, value)
     ON CONFLICT (environment_id, name) ${onConflict}
     RETURNING name`,
    [environmentId, rows.map((r) => r.name), rows.map((r) => r.valueEncrypted), options.isSecret, now],
  );
  return result.rows.map((r) => r.name);
}

/** Replaces the value of an existing variable; `{ changed: false }` when it does not exist. */
export async function updateVariableValue(
  db: Queryable,
  environmentId: string,
  name: string,
  valueEncrypted: string,
  now: Date,
): Promise<{ changed: boolean }> {
  const { rowCount } = await db.query(
    `UPDATE environment_variables SET value_encrypted = $3, updated_at = $4 WHERE environment_id = $1 AND name = $2`,
    [environmentId, name, valueEncrypted, now],
  );
  return { changed: (rowCount ?? 0) > 0 };
}

export async function deleteVariable(db: Queryable, environmentId: string, name: string): Promise<{ changed: boolean }> {
  const { rowCount } = await db.query(`DELETE FROM environment_variables WHERE environment_id = $1 AND name = $2`, [environmentId, name]);
  return { changed: (rowCount ?? 0) > 0 };
}
