// The migrator: checksums of applied migrations, their backfill on databases migrated before
// checksums were kept, rollback of a failing migration, and processes migrating at once.
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checksumOf, createPool, dumpSchema, FUNCTIONS_DIR, loadFunctionFiles, loadMigrations, migrate, MIGRATIONS_DIR, readinessCheck } from "@svc/runtime/db";
import { MigrationError } from "@svc/runtime/engine";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { copyOfSqlFiles } from "./migrator-fixtures.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase({ empty: true });
  cleanups.push(() => db.drop());
  return db;
}

function sqlFiles() {
  const files = copyOfSqlFiles();
  cleanups.push(files.remove);
  return files;
}

async function tableExists(db: TestDatabase, name: string): Promise<boolean> {
  const { rows } = await db.pool.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [name]);
  return rows[0]!.t !== null;
}

describe("checksums", () => {
  it("records the sha256 of each migration's text", async () => {
    const db = await emptyDatabase();
    await migrate(db.pool);
    const { rows } = await db.pool.query<{ name: string; checksum: string }>("SELECT name, checksum FROM svc_migrations ORDER BY id");
    const expected = (await loadMigrations()).map((m) => ({ name: m.name, checksum: checksumOf(readFileSync(join(MIGRATIONS_DIR, `${m.name}.sql`), "utf8")) }));
    expect(rows).toEqual(expected);
    expect(expected[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it("stops startup when an applied migration's file changed, naming it and both checksums, and applies nothing", async () => {
    const db = await emptyDatabase();
    const files = sqlFiles();
    await migrate(db.pool, files);
    const file = join(files.migrationsDir, "0018_resume_offers.sql");
    const recorded = checksumOf(readFileSync(file, "utf8"));
    appendFileSync(file, "\nALTER TABLE workers ADD COLUMN changed_later text;\n");
    const now = checksumOf(readFileSync(file, "utf8"));
    // A migration added since, which must not be applied past the changed one.
    const next = String((await loadMigrations(files.migrationsDir)).at(-1)!.id + 1).padStart(4, "0");
    writeFileSync(join(files.migrationsDir, `${next}_pending.sql`), "CREATE TABLE pending_meanwhile (id int);\n");

    const error = await migrate(db.pool, files).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MigrationError);
    const message = (error as Error).message;
    expect(message).toContain("migration 0018_resume_offers was changed after it was applied");
    expect(message).toContain(`recorded checksum ${recorded}`);
    expect(message).toContain(`file now ${now}`);
    expect(message).toContain("make the change in a new migration");
    expect(await tableExists(db, "pending_meanwhile")).toBe(false);
  });

  it("reads CRLF line endings as LF: a Windows checkout is not a changed file", async () => {
    const db = await emptyDatabase();
    const files = sqlFiles();
    await migrate(db.pool, files);
    for (const m of await loadMigrations(files.migrationsDir)) {
      writeFileSync(join(files.migrationsDir, `${m.name}.sql`), m.sql.replace(/\n/g, "\r\n"));
    }
    await expect(migrate(db.pool, files)).resolves.toEqual({ applied: [], backfilled: [], functions: [] });
  });

  it("stops startup when another file took an applied migration's number", async () => {
    const db = await emptyDatabase();
    const files = sqlFiles();
    await migrate(db.pool, files);
    renameSync(join(files.migrationsDir, "0018_resume_offers.sql"), join(files.migrationsDir, "0018_offers.sql"));
    await expect(migrate(db.pool, files)).rejects.toThrow("migration 18 was applied as 0018_resume_offers, but the file with that number is now 0018_offers.sql");
  });

  it("refuses two files with one number", async () => {
    const files = sqlFiles();
    writeFileSync(join(files.migrationsDir, "0018_also.sql"), "SELECT 1;\n");
    await expect(loadMigrations(files.migrationsDir)).rejects.toThrow("migrations 0018_also and 0018_resume_offers share the id 18: renumber the newer one");
  });
});

describe("a database migrated before checksums and function files", () => {
  /** What the migrator before checksums did: svc_migrations without a checksum, each migration applied. */
  async function migrateTheOldWay(db: TestDatabase): Promise<void> {
    await db.pool.query(`CREATE TABLE svc_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const m of await loadMigrations()) {
      const client = await db.pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("INSERT INTO svc_migrations (id, name) VALUES ($1, $2)", [m.id, m.name]);
        await client.query(m.sql);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    }
  }

  it("gets its checksums recorded and its functions replaced by their files' text: the same schema as a fresh database", async () => {
    const fresh = await emptyDatabase();
    await migrate(fresh.pool);
    const old = await emptyDatabase();
    await migrateTheOldWay(old);
    // As if it had applied an earlier text of 0018, whose svc_complete_waitpoint was 0007's.
    const earlier = readFileSync(join(MIGRATIONS_DIR, "0007_resume_outbox.sql"), "utf8");
    await old.pool.query(earlier.slice(earlier.indexOf("CREATE FUNCTION svc_complete_waitpoint(")).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"));
    expect(await dumpSchema(old.pool)).not.toEqual(await dumpSchema(fresh.pool));

    const migrations = await loadMigrations();
    const result = await migrate(old.pool);
    expect(result).toEqual({
      applied: [],
      backfilled: migrations.map((m) => m.name).sort(),
      functions: (await loadFunctionFiles()).map((f) => f.name),
    });
    const { rows } = await old.pool.query<{ checksum: string }>("SELECT checksum FROM svc_migrations ORDER BY id");
    expect(rows.map((r) => r.checksum)).toEqual(migrations.map((m) => m.checksum));
    expect(await dumpSchema(old.pool)).toEqual(await dumpSchema(fresh.pool));
    await expect(migrate(old.pool)).resolves.toEqual({ applied: [], backfilled: [], functions: [] });
  });

  it("records a checksum for a migration an older build applied in a rolling deploy", async () => {
    const db = await emptyDatabase();
    await migrate(db.pool);
    await db.pool.query("UPDATE svc_migrations SET checksum = NULL WHERE id = 18");
    const result = await migrate(db.pool);
    expect(result.backfilled).toEqual(["0018_resume_offers"]);
    const { rows } = await db.pool.query<{ checksum: string }>("SELECT checksum FROM svc_migrations WHERE id = 18");
    expect(rows[0]!.checksum).toBe((await loadMigrations()).find((m) => m.id === 18)!.checksum);
  });
});

describe("failure and concurrency", () => {
  it("rolls back the whole of a failing migration, records nothing, and applies it once it is fixed", async () => {
    const db = await emptyDatabase();
    const files = sqlFiles();
    const broken = join(files.migrationsDir, "0099_broken.sql");
    writeFileSync(broken, "CREATE TABLE half_done (id int);\nSELECT 1 / 0;\n");
    await expect(migrate(db.pool, files)).rejects.toThrow("migration 0099_broken failed: division by zero");
    expect(await tableExists(db, "half_done")).toBe(false);
    const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM svc_migrations WHERE id = 99");
    expect(rows[0]!.n).toBe(0);
    // The earlier migrations stay applied; the pool's connections are usable (no lock left held).
    expect(await tableExists(db, "runs")).toBe(true);

    writeFileSync(broken, "CREATE TABLE half_done (id int);\n");
    await expect(migrate(db.pool, files)).resolves.toMatchObject({ applied: ["0099_broken"] });
    expect(await tableExists(db, "half_done")).toBe(true);
  });

  it("lets several processes start at once: each migration and function file is applied exactly once", async () => {
    const db = await emptyDatabase();
    const pools = Array.from({ length: 4 }, () => createPool(db.url, { max: 1, onError: () => {} }));
    cleanups.push(() => Promise.all(pools.map((p) => p.end())).then(() => {}));
    const results = await Promise.all(pools.map((pool) => migrate(pool)));
    const applied = results.flatMap((r) => r.applied).sort();
    const functions = results.flatMap((r) => r.functions).sort();
    expect(applied).toEqual((await loadMigrations()).map((m) => m.name));
    expect(functions).toEqual((await loadFunctionFiles(FUNCTIONS_DIR)).map((f) => f.name).sort());
    expect(results.flatMap((r) => r.backfilled)).toEqual([]);
  });
});

describe("readiness (the API's /readyz)", () => {
  it("is ready only once the newest migration is applied, and reads the migration files once, not on every probe", async () => {
    const db = await emptyDatabase();
    const files = sqlFiles();
    const ready = readinessCheck(db.pool, files.migrationsDir);
    expect(await ready()).toBe(false);
    await migrate(db.pool, { migrationsDir: files.migrationsDir, functionsDir: files.functionsDir });
    expect(await ready()).toBe(true);
    const newest = (await loadMigrations(files.migrationsDir)).at(-1)!;
    await db.pool.query("DELETE FROM svc_migrations WHERE id = $1", [newest.id]);
    expect(await ready()).toBe(false);
    await db.pool.query("INSERT INTO svc_migrations (id, name, checksum) VALUES ($1, $2, $3)", [newest.id, newest.name, newest.checksum]);
    // A file added after the first probe is not this build's: the probe read the folder once.
    writeFileSync(join(files.migrationsDir, "9999_later.sql"), "SELECT 1;\n");
    expect(await ready()).toBe(true);
    expect(await readinessCheck(db.pool, files.migrationsDir)()).toBe(false);
  });
});
