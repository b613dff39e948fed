import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type pg from "pg";

const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));
// Any constant shared by every svc process; serialises concurrent migrators.
const MIGRATION_LOCK_KEY = 7_246_001;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({
      id: Number(file.slice(0, 4)),
      name: file.replace(/\.sql$/, ""),
      sql: await readFile(dir + file, "utf8"),
    })),
  );
}

/**
 * Applies every pending migration, each in its own transaction, under a session advisory lock,
 * so any number of processes may start at once: the first migrates, the others wait and find
 * nothing left to do.
 */
export async function migrate(pool: pg.Pool): Promise<{ applied: string[] }> {
  const migrations = await loadMigrations();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS svc_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ id: number }>("SELECT id FROM svc_migrations")).rows.map((r) => r.id));
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      await client.query("BEGIN");
      try {
        // The id is recorded first: a second migrator that somehow got here fails on the key.
        await client.query("INSERT INTO svc_migrations (id, name) VALUES ($1, $2)", [migration.id, migration.name]);
        await client.query(migration.sql);
        await client.query("COMMIT");
        applied.push(migration.name);
      } catch (error) {
        await client.query("ROLLBACK");
        throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
      }
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
    client.release();
  }
  return { applied };
}

/** True when the database is reachable and every migration this build knows is applied. */
export async function migrationsApplied(db: { query: pg.Pool["query"] }): Promise<boolean> {
  const migrations = await loadMigrations();
  const exists = await db.query("SELECT to_regclass('svc_migrations') AS t");
  if (!exists.rows[0]?.t) return false;
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM svc_migrations");
  return (rows[0]?.n ?? 0) >= migrations.length;
}
