import type pg from "pg";
import { MigrationError } from "../errors.ts";
import { applyFunctionFiles, FUNCTIONS_TABLE_DDL } from "./function-files.ts";
import { FUNCTIONS_DIR, loadFunctionFiles, loadMigrations, MIGRATIONS_DIR, type Migration } from "./migration-files.ts";

export { loadMigrations, loadFunctionFiles, checksumOf, MIGRATIONS_DIR, FUNCTIONS_DIR, type Migration, type FunctionFile } from "./migration-files.ts";

// Any constant shared by every svc process; serialises concurrent migrators.
const MIGRATION_LOCK_KEY = 7_246_001;

export interface MigrateOptions {
  /** Folders to read instead of packages/runtime/migrations and packages/runtime/sql/functions (tests). */
  migrationsDir?: string;
  functionsDir?: string;
}

export interface MigrateResult {
  /** Numbered migrations applied by this call. */
  applied: string[];
  /** Migrations applied before checksums were recorded, whose checksum this call recorded. */
  backfilled: string[];
  /** Function files (re)applied by this call. */
  functions: string[];
}

/**
 * Brings the database up to date, under a session advisory lock, so any number of processes may
 * start at once: the first migrates, the others wait and find nothing left to do.
 *
 * 1. Bookkeeping: svc_migrations (id, name, checksum) and svc_functions, created or extended here
 *    rather than by a numbered migration, since svc_migrations must exist before the first one.
 *    Rows recorded before checksums were kept get the current file's checksum.
 * 2. Every applied migration must still have the checksum it was applied with; otherwise nothing
 *    is applied and startup stops with a MigrationError that names the migration.
 * 3. Each pending migration in its own transaction, its id and checksum recorded first.
 * 4. Function files whose checksum changed, all in one transaction: where the current text of
 *    each plpgsql function lives (numbered migrations hold their history). Skipped when the
 *    database records migrations this build does not have (a newer build migrated it).
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<MigrateResult> {
  const migrations = await loadMigrations(options.migrationsDir ?? MIGRATIONS_DIR);
  const functionFiles = await loadFunctionFiles(options.functionsDir ?? FUNCTIONS_DIR);
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    const backfilled = await inTransaction(client, () => prepareBookkeeping(client, migrations));
    const recorded = (await client.query<Recorded>("SELECT id, name, checksum FROM svc_migrations ORDER BY id")).rows;
    verifyChecksums(migrations, recorded);
    const done = new Set(recorded.map((r) => r.id));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      await inTransaction(client, async () => {
        // The id is recorded first: a second migrator that somehow got here fails on the key.
        await client.query("INSERT INTO svc_migrations (id, name, checksum) VALUES ($1, $2, $3)", [migration.id, migration.name, migration.checksum]);
        await client.query(migration.sql);
      }).catch((error: Error) => {
        throw error instanceof MigrationError ? error : new MigrationError(`migration ${migration.name} failed: ${error.message}`, { cause: error });
      });
      applied.push(migration.name);
    }
    // A database that a newer build migrated (it records migrations this build lacks) keeps that
    // build's functions: an older process restarting during a rolling deploy must not put back
    // its own texts after the newer build replaced them.
    const known = new Set(migrations.map((m) => m.id));
    const newerBuild = recorded.some((r) => !known.has(r.id));
    const functions = newerBuild ? [] : await inTransaction(client, () => applyFunctionFiles(client, functionFiles));
    return { applied, backfilled, functions };
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    try {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
    } catch (error) {
      broken ??= error as Error;
    }
    // After a failure the connection is destroyed rather than pooled: its session, and any lock
    // or transaction it might still hold, end with it.
    client.release(broken);
  }
}

interface Recorded {
  id: number;
  name: string;
  checksum: string | null;
}

async function inTransaction<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  let result: T;
  try {
    result = await fn();
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      // A dead connection: report both, the first error first.
      throw new Error(`${(error as Error).message} (and ROLLBACK failed: ${(rollbackError as Error).message})`, { cause: error });
    }
    throw error;
  }
  await client.query("COMMIT");
  return result;
}

/** Creates or extends the bookkeeping tables; records checksums of migrations applied without one. */
async function prepareBookkeeping(client: pg.PoolClient, migrations: Migration[]): Promise<string[]> {
  await client.query(`CREATE TABLE IF NOT EXISTS svc_migrations (
    id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`);
  // Databases migrated before checksums were recorded. (Nullable: a process of an older build,
  // in a rolling deploy, records a migration without one; the next start fills it in.)
  const { rowCount } = await client.query(`SELECT 1 FROM pg_attribute WHERE attrelid = 'svc_migrations'::regclass AND attname = 'checksum' AND NOT attisdropped`);
  if (rowCount === 0) await client.query("ALTER TABLE svc_migrations ADD COLUMN checksum text");
  await client.query(FUNCTIONS_TABLE_DDL);
  // Trust on first use: the database is taken to have applied the files as they are now.
  const { rows } = await client.query<{ name: string }>(
    `UPDATE svc_migrations m SET checksum = f.checksum FROM unnest($1::int[], $2::text[]) AS f(id, checksum)
     WHERE m.id = f.id AND m.checksum IS NULL RETURNING m.name`,
    [migrations.map((m) => m.id), migrations.map((m) => m.checksum)],
  );
  return rows.map((r) => r.name).sort();
}

/**
 * An applied migration whose file now reads differently (or is another file under its number)
 * would leave this database different from a fresh one without a word: refuse to start.
 * Recorded ids without a file (a database a newer build migrated) are left alone.
 */
function verifyChecksums(migrations: Migration[], recorded: Recorded[]): void {
  const files = new Map(migrations.map((m) => [m.id, m]));
  const problems: string[] = [];
  for (const row of recorded) {
    const file = files.get(row.id);
    if (!file) continue;
    if (file.name !== row.name) {
      problems.push(`migration ${row.id} was applied as ${row.name}, but the file with that number is now ${file.name}.sql`);
    } else if (row.checksum !== null && row.checksum !== file.checksum) {
      problems.push(`migration ${row.name} was changed after it was applied to this database: recorded checksum ${row.checksum}, file now ${file.checksum}`);
    }
  }
  if (problems.length === 0) return;
  throw new MigrationError(
    `${problems.join("; ")}. ` +
      "A released migration is never edited: restore the file as it was applied (see git log -p on it) and make the change in a new migration " +
      "(a plpgsql function's current text lives in packages/runtime/sql/functions/). " +
      "A development database can instead be dropped and created again. " +
      "Only if this database already has exactly the effect of the new text, record that: UPDATE svc_migrations SET checksum = '<file now>' WHERE id = <id>.",
  );
}

/** True when the database is reachable and every migration this build knows is applied. */
export async function migrationsApplied(db: { query: pg.Pool["query"] }): Promise<boolean> {
  return readinessCheck(db)();
}

/**
 * `migrationsApplied` for a process that asks again and again (the API's /readyz, which anyone
 * may call): the migration files are read once, on the first check (not on every probe), and a check
 * asks whether the newest of them is applied.
 */
export function readinessCheck(db: { query: pg.Pool["query"] }, dir = MIGRATIONS_DIR): () => Promise<boolean> {
  let newest: Promise<number | null> | null = null;
  return async () => {
    newest ??= loadMigrations(dir).then((migrations) => migrations.at(-1)?.id ?? null, (error: unknown) => {
      newest = null;
      throw error;
    });
    const id = await newest;
    const exists = await db.query<{ t: string | null }>("SELECT to_regclass('svc_migrations') AS t");
    if (!exists.rows[0]?.t) return false;
    if (id === null) return true;
    const { rows } = await db.query<{ applied: boolean }>("SELECT EXISTS (SELECT 1 FROM svc_migrations WHERE id = $1) AS applied", [id]);
    return rows[0]?.applied ?? false;
  };
}
