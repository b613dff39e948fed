import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MigrationError } from "../errors.ts";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));
export const FUNCTIONS_DIR = fileURLToPath(new URL("../../sql/functions/", import.meta.url));

/** A numbered migration: `NNNN_name.sql`, applied once, never edited once released. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
  checksum: string;
}

/** The current text of one plpgsql function: `<function name>.sql`, one CREATE OR REPLACE FUNCTION. */
export interface FunctionFile {
  name: string;
  sql: string;
  checksum: string;
}

/**
 * sha256 (hex) of a file's text with CRLF and CR line endings read as LF, so a checkout with
 * Windows line endings (git autocrlf) has the checksum the file was applied with.
 */
export function checksumOf(text: string): string {
  return createHash("sha256").update(text.replace(/\r\n?/g, "\n")).digest("hex");
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  const migrations = await Promise.all(
    files.map(async (file) => {
      const sql = await readFile(join(dir, file), "utf8");
      return { id: Number(file.slice(0, 4)), name: file.replace(/\.sql$/, ""), sql, checksum: checksumOf(sql) };
    }),
  );
  // Two branches that each add the next number must not both merge: the database records ids, and
  // would take the second file for the first one.
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.id === migrations[i - 1]!.id) {
      throw new MigrationError(`migrations ${migrations[i - 1]!.name} and ${migrations[i]!.name} share the id ${migrations[i]!.id}: renumber the newer one`);
    }
  }
  return migrations;
}

/**
 * Reads `<name>.sql` from the functions folder. Each must hold exactly one
 * `CREATE OR REPLACE FUNCTION <name>(`, unqualified (it lands in the schema the migrations use).
 * The checksum is of the text that is executed: if constants are ever rendered into these
 * files, render before hashing, so that changing a constant re-applies the function.
 */
export async function loadFunctionFiles(dir = FUNCTIONS_DIR): Promise<FunctionFile[]> {
  // A missing folder (an image built without it) fails here rather than leave functions stale.
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  return Promise.all(
    files.map(async (file) => {
      const name = file.replace(/\.sql$/, "");
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new MigrationError(`function file ${file}: the name must be a lower-case SQL identifier, the function's name`);
      const sql = await readFile(join(dir, file), "utf8");
      const creates = sql.match(/\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\b/gi) ?? [];
      const ownCreate = new RegExp(`\\bCREATE\\s+OR\\s+REPLACE\\s+FUNCTION\\s+${name}\\s*\\(`, "i");
      if (creates.length !== 1 || !ownCreate.test(sql)) {
        throw new MigrationError(`function file ${file} must hold exactly one "CREATE OR REPLACE FUNCTION ${name}(" and no other function`);
      }
      return { name, sql, checksum: checksumOf(sql) };
    }),
  );
}
