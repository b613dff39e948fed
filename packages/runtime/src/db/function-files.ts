import type pg from "pg";
import { MigrationError } from "../errors.ts";
import type { FunctionFile } from "./migration-files.ts";

/** Keeps the function files' checksums; created (like svc_migrations) by the migrator itself. */
export const FUNCTIONS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS svc_functions (
  name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;

/**
 * Applies, in the caller's transaction, every function file whose checksum differs from the one
 * recorded in svc_functions, or whose function is missing from the schema (a numbered migration
 * dropped it). Returns the names applied.
 */
export async function applyFunctionFiles(client: pg.PoolClient, files: FunctionFile[]): Promise<string[]> {
  const recorded = new Map(
    (await client.query<{ name: string; checksum: string }>("SELECT name, checksum FROM svc_functions")).rows.map((r) => [r.name, r.checksum]),
  );
  const present = new Set(
    (await client.query<{ proname: string }>("SELECT DISTINCT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace")).rows.map((r) => r.proname),
  );
  const applied: string[] = [];
  for (const file of files) {
    if (recorded.get(file.name) === file.checksum && present.has(file.name)) continue;
    try {
      await replaceFunction(client, file);
    } catch (error) {
      throw new MigrationError(`function file ${file.name}.sql failed: ${(error as Error).message}`, { cause: error });
    }
    await client.query(
      `INSERT INTO svc_functions (name, checksum) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
      [file.name, file.checksum],
    );
    applied.push(file.name);
  }
  return applied;
}

interface Overload {
  oid: string;
  args: string;
}

async function overloads(client: pg.PoolClient, name: string): Promise<Overload[]> {
  const { rows } = await client.query<Overload>(
    `SELECT oid::text AS oid, pg_get_function_identity_arguments(oid) AS args FROM pg_proc
     WHERE proname = $1 AND pronamespace = current_schema()::regnamespace`,
    [name],
  );
  return rows;
}

/**
 * Runs the file's CREATE OR REPLACE FUNCTION so that afterwards exactly one function has the
 * name. Signature changes: new argument types create a second function beside the old one,
 * which is then dropped; a new return type or new parameter names are refused by
 * CREATE OR REPLACE (42P13), so the old one is dropped first and the file run again. A DROP
 * never cascades: when something depends on the old function (a trigger, a view), it fails and
 * the change needs a numbered migration that drops and recreates the dependants.
 */
async function replaceFunction(client: pg.PoolClient, file: FunctionFile): Promise<void> {
  const before = await overloads(client, file.name);
  await client.query("SAVEPOINT svc_function_file");
  try {
    await client.query(file.sql);
  } catch (error) {
    if ((error as { code?: string }).code !== "42P13" || before.length === 0) throw error;
    await client.query("ROLLBACK TO SAVEPOINT svc_function_file");
    for (const old of before) await client.query(`DROP FUNCTION ${file.name}(${old.args})`);
    await client.query(file.sql);
  }
  await client.query("RELEASE SAVEPOINT svc_function_file");
  const after = await overloads(client, file.name);
  const created = after.filter((f) => !before.some((b) => b.oid === f.oid));
  if (created.length > 0) {
    for (const old of after.filter((f) => before.some((b) => b.oid === f.oid))) {
      await client.query(`DROP FUNCTION ${file.name}(${old.args})`);
    }
  }
  const remaining = await overloads(client, file.name);
  if (remaining.length !== 1) {
    throw new Error(`expected one function ${file.name} after applying its file, found ${remaining.length}: ${remaining.map((f) => `(${f.args})`).join(", ")}`);
  }
}
