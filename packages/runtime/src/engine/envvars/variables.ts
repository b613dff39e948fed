import { withTransaction, type Pool, type Queryable } from "../../db/queryable.ts";
import { NotFoundError, ValidationError } from "../../errors.ts";
import type { Environment } from "../tenancy/environments.ts";
import type { SecretBox } from "../tenancy/secret-box.ts";
import { assertValidVariables, MAX_VARIABLES_PER_UPLOAD, REDACTED_VALUE } from "./names.ts";
import { deleteVariable, selectExistingNames, selectVariable, selectVariables, updateVariableValue, writeVariables, type StoredVariable } from "./store.ts";

/** A variable as the API shows it: a secret's value reads as "<redacted>". */
export interface EnvironmentVariable {
  name: string;
  value: string;
  isSecret: boolean;
}

/** The environment a variable operation targets: a root environment or a preview branch. */
export type VariableScope = Pick<Environment, "id" | "parentEnvironmentId">;

function present(box: SecretBox, row: StoredVariable): EnvironmentVariable {
  return { name: row.name, value: row.isSecret ? REDACTED_VALUE : box.decrypt(row.valueEncrypted), isSecret: row.isSecret };
}

/** The rows a scope sees: for a branch, the parent's rows with the branch's own rows over them. */
async function visibleRows(db: Queryable, scope: VariableScope): Promise<StoredVariable[]> {
  const own = await selectVariables(db, scope.id);
  if (!scope.parentEnvironmentId) return own;
  const merged = new Map((await selectVariables(db, scope.parentEnvironmentId)).map((row) => [row.name, row]));
  for (const row of own) merged.set(row.name, row);
  return [...merged.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `envvars.list`: every variable the environment sees, sorted by name, secrets redacted. */
export async function listEnvironmentVariables(db: Queryable, box: SecretBox, scope: VariableScope): Promise<EnvironmentVariable[]> {
  return (await visibleRows(db, scope)).map((row) => present(box, row));
}

/** `envvars.retrieve`: one variable as the environment sees it (a branch falls back to its parent). */
export async function retrieveEnvironmentVariable(db: Queryable, box: SecretBox, scope: VariableScope, name: string): Promise<EnvironmentVariable> {
  const row =
    (await selectVariable(db, scope.id, name)) ??
    (scope.parentEnvironmentId ? await selectVariable(db, scope.parentEnvironmentId, name) : null);
  if (!row) throw new NotFoundError("Environment variable not found");
  return present(box, row);
}

export type UploadResult = { ok: true; written: string[] } | { ok: false; conflicts: string[] };

class UploadConflict extends Error {
  constructor(readonly conflicts: string[]) {
    super("conflict");
  }
}

/**
 * `envvars.upload`: writes many variables in one transaction. Without `override` (the default)
 * nothing is written when any name already exists in this environment; the names come back as
 * `conflicts`. With `override` existing values are replaced.
 */
export async function uploadEnvironmentVariables(
  pool: Pool,
  box: SecretBox,
  scope: VariableScope,
  variables: Record<string, string>,
  options: { override?: boolean; isSecret?: boolean },
  now: Date,
): Promise<UploadResult> {
  const names = Object.keys(variables);
  if (names.length === 0) throw new ValidationError("You must set at least one variable");
  if (names.length > MAX_VARIABLES_PER_UPLOAD) throw new ValidationError(`At most ${MAX_VARIABLES_PER_UPLOAD} variables per upload`);
  assertValidVariables(variables);
  const override = options.override ?? false;
  const rows = names.map((name) => ({ name, valueEncrypted: box.encrypt(variables[name]!) }));
  try {
    const written = await withTransaction(pool, async (tx) => {
      if (!override) {
        const existing = await selectExistingNames(tx, scope.id, names);
        if (existing.length > 0) throw new UploadConflict(existing);
      }
      const done = await writeVariables(tx, scope.id, rows, { isSecret: options.isSecret ?? null, override }, now);
      // A concurrent upload inserted one of our names between the check and the insert.
      if (done.length < rows.length) throw new UploadConflict(names.filter((n) => !done.includes(n)).sort());
      return done;
    });
    return { ok: true, written: written.sort() };
  } catch (error) {
    if (error instanceof UploadConflict) return { ok: false, conflicts: error.conflicts };
    throw error;
  }
}

/** `envvars.create`: sets one variable, replacing an existing value (Trigger.dev: create always overrides). */
export async function createEnvironmentVariable(
  db: Queryable,
  box: SecretBox,
  scope: VariableScope,
  input: { name: string; value: string; isSecret?: boolean },
  now: Date,
): Promise<void> {
  assertValidVariables({ [input.name]: input.value });
  await writeVariables(db, scope.id, [{ name: input.name, valueEncrypted: box.encrypt(input.value) }], { isSecret: input.isSecret ?? null, override: true }, now);
}

/**
 * `envvars.update`: replaces the value of a variable this environment has. A branch updates only
 * its own values: a name set only on the parent preview environment is a 404 here (create it on
 * the branch to override the parent's value).
 */
export async function updateEnvironmentVariable(db: Queryable, box: SecretBox, scope: VariableScope, name: string, value: string, now: Date): Promise<void> {
  assertValidVariables({ [name]: value });
  const { changed } = await updateVariableValue(db, scope.id, name, box.encrypt(value), now);
  if (!changed) throw new NotFoundError("Environment variable not found");
}

/** `envvars.del`: removes this environment's value (a branch never deletes its parent's). */
export async function deleteEnvironmentVariable(db: Queryable, scope: VariableScope, name: string): Promise<void> {
  const { changed } = await deleteVariable(db, scope.id, name);
  if (!changed) throw new NotFoundError("Environment variable not found");
}

/**
 * The variables a run of this environment gets in `process.env`, in the clear: for a preview
 * branch, the parent preview environment's values with the branch's own values over them.
 */
export async function loadEnvironmentVariables(db: Queryable, box: SecretBox, environmentId: string): Promise<Record<string, string>> {
  const { rows } = await db.query<{ parent_environment_id: string | null }>(
    `SELECT parent_environment_id FROM environments WHERE id = $1`,
    [environmentId],
  );
  if (!rows[0]) return {};
  const visible = await visibleRows(db, { id: environmentId, parentEnvironmentId: rows[0].parent_environment_id });
  return Object.fromEntries(visible.map((row) => [row.name, box.decrypt(row.valueEncrypted)]));
}
