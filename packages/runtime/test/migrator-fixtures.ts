import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FUNCTIONS_DIR, MIGRATIONS_DIR } from "@svc/runtime/db";

/**
 * Copies of the repository's migrations and function files in a temporary folder, for tests that
 * change, add or break files without touching the repository's own.
 */
export function copyOfSqlFiles(): { migrationsDir: string; functionsDir: string; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), "svc-migrations-"));
  const migrationsDir = join(root, "migrations");
  const functionsDir = join(root, "functions");
  cpSync(MIGRATIONS_DIR, migrationsDir, { recursive: true });
  cpSync(FUNCTIONS_DIR, functionsDir, { recursive: true });
  return { migrationsDir, functionsDir, remove: () => rmSync(root, { recursive: true, force: true }) };
}
