// Function files (packages/runtime/sql/functions): the one place each plpgsql function's current
// text lives, applied after the numbered migrations whenever a file's checksum changes.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checksumOf, loadFunctionFiles, migrate } from "@svc/runtime/db";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { copyOfSqlFiles } from "./migrator-fixtures.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function migratedDatabase(): Promise<{ db: TestDatabase; files: ReturnType<typeof copyOfSqlFiles> }> {
  const db = await createTestDatabase({ empty: true });
  cleanups.push(() => db.drop());
  const files = copyOfSqlFiles();
  cleanups.push(files.remove);
  await migrate(db.pool, files);
  return { db, files };
}

async function definitions(db: TestDatabase, name: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ def: string }>(
    "SELECT pg_get_functiondef(oid) AS def FROM pg_proc WHERE proname = $1 AND pronamespace = 'public'::regnamespace ORDER BY oid",
    [name],
  );
  return rows.map((r) => r.def);
}

describe("function files", () => {
  it("define the functions of a fresh database, with their checksums recorded", async () => {
    const { db } = await migratedDatabase();
    const files = await loadFunctionFiles();
    expect(files.map((f) => f.name)).toEqual(["svc_append_run_stream_records", "svc_append_session_records", "svc_batch_trigger", "svc_channel_wait_output", "svc_claimed_ledger", "svc_complete_waitpoint", "svc_input_rows", "svc_make_channel_wait", "svc_notify_credentials_changed", "svc_offer_at_commit", "svc_offer_worker", "svc_parse_duration", "svc_queue_is_limited", "svc_queue_limit", "svc_queue_side_changed", "svc_rate_wait", "svc_run_changed", "svc_runs_inserted", "svc_time_ordered_id", "svc_trigger", "svc_trigger_environment", "svc_trigger_run"]);
    const { rows } = await db.pool.query<{ name: string; checksum: string }>("SELECT name, checksum FROM svc_functions ORDER BY name");
    expect(rows).toEqual(files.map((f) => ({ name: f.name, checksum: f.checksum })));
    // The text in force is the file's (the body between the dollar quotes is kept verbatim).
    for (const file of files) {
      const body = file.sql.slice(file.sql.indexOf("$$") + 2, file.sql.lastIndexOf("$$"));
      const [def] = await definitions(db, file.name);
      expect(def).toContain(body);
    }
  });

  it("re-apply a changed file once, in place: its trigger keeps firing it", async () => {
    const { db, files } = await migratedDatabase();
    const path = join(files.functionsDir, "svc_notify_credentials_changed.sql");
    writeFileSync(path, readFileSync(path, "utf8").replace("PERFORM pg_notify('svc_credentials', TG_TABLE_NAME);", "PERFORM pg_notify('svc_credentials', 'changed ' || TG_TABLE_NAME);"));

    expect(await migrate(db.pool, files)).toEqual({ applied: [], backfilled: [], functions: ["svc_notify_credentials_changed"] });
    const [def] = await definitions(db, "svc_notify_credentials_changed");
    expect(def).toContain("'changed ' || TG_TABLE_NAME");
    const { rows } = await db.pool.query<{ checksum: string }>("SELECT checksum FROM svc_functions WHERE name = 'svc_notify_credentials_changed'");
    expect(rows[0]!.checksum).toBe(checksumOf(readFileSync(path, "utf8")));
    expect(await migrate(db.pool, files)).toEqual({ applied: [], backfilled: [], functions: [] });
    const { rows: triggers } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_trigger WHERE tgname IN ('secret_keys_changed', 'environments_changed')");
    expect(triggers[0]!.n).toBe(2);
  });

  it("re-apply a function that a migration dropped, though its file is unchanged", async () => {
    const { db, files } = await migratedDatabase();
    writeFileSync(join(files.migrationsDir, "0099_drop.sql"), "DROP FUNCTION svc_complete_waitpoint;\n");
    expect(await migrate(db.pool, files)).toEqual({ applied: ["0099_drop"], backfilled: [], functions: ["svc_complete_waitpoint"] });
    expect(await definitions(db, "svc_complete_waitpoint")).toHaveLength(1);
  });

  it("replace a function whose argument types, then return type, change: one function of the name remains", async () => {
    const { db, files } = await migratedDatabase();
    const path = join(files.functionsDir, "svc_test_double.sql");
    writeFileSync(path, "CREATE OR REPLACE FUNCTION svc_test_double(a integer) RETURNS integer LANGUAGE sql AS $$ SELECT a * 2 $$;\n");
    expect((await migrate(db.pool, files)).functions).toEqual(["svc_test_double"]);

    writeFileSync(path, "CREATE OR REPLACE FUNCTION svc_test_double(a bigint) RETURNS integer LANGUAGE sql AS $$ SELECT (a * 2)::int $$;\n");
    expect((await migrate(db.pool, files)).functions).toEqual(["svc_test_double"]);
    expect(await definitions(db, "svc_test_double")).toEqual([expect.stringContaining("svc_test_double(a bigint)")]);

    // CREATE OR REPLACE cannot change a return type: the old function is dropped first.
    writeFileSync(path, "CREATE OR REPLACE FUNCTION svc_test_double(a bigint) RETURNS text LANGUAGE sql AS $$ SELECT (a * 2)::text $$;\n");
    expect((await migrate(db.pool, files)).functions).toEqual(["svc_test_double"]);
    const { rows } = await db.pool.query<{ v: string }>("SELECT svc_test_double(21) AS v");
    expect(rows[0]!.v).toBe("42");
    expect(await definitions(db, "svc_test_double")).toHaveLength(1);
  });

  it("apply all changed files in one transaction: a failing file leaves every function as it was", async () => {
    const { db, files } = await migratedDatabase();
    const good = join(files.functionsDir, "svc_notify_credentials_changed.sql");
    const goodBefore = await definitions(db, "svc_notify_credentials_changed");
    writeFileSync(good, readFileSync(good, "utf8").replace("RETURN NULL;", "RETURN NULL; -- changed"));
    const bad = join(files.functionsDir, "svc_complete_waitpoint.sql");
    writeFileSync(bad, readFileSync(bad, "utf8").replace("LANGUAGE plpgsql VOLATILE", "LANGUAGE no_such_language VOLATILE"));

    await expect(migrate(db.pool, files)).rejects.toThrow('function file svc_complete_waitpoint.sql failed: language "no_such_language" does not exist');
    expect(await definitions(db, "svc_notify_credentials_changed")).toEqual(goodBefore);
    const { rows } = await db.pool.query<{ name: string; checksum: string }>("SELECT name, checksum FROM svc_functions ORDER BY name");
    expect(rows).toEqual((await loadFunctionFiles()).map((f) => ({ name: f.name, checksum: f.checksum })));
  });

  it("are left alone on a database that a newer build migrated: an older process restarting does not put back its texts", async () => {
    const { db, files } = await migratedDatabase();
    await db.pool.query("INSERT INTO svc_migrations (id, name, checksum) VALUES (9999, '9999_from_a_newer_build', 'x')");
    const path = join(files.functionsDir, "svc_notify_credentials_changed.sql");
    const before = await definitions(db, "svc_notify_credentials_changed");
    writeFileSync(path, readFileSync(path, "utf8").replace("RETURN NULL;", "RETURN NULL; -- older text"));
    expect(await migrate(db.pool, files)).toEqual({ applied: [], backfilled: [], functions: [] });
    expect(await definitions(db, "svc_notify_credentials_changed")).toEqual(before);
  });

  it("refuse a file that is not one CREATE OR REPLACE FUNCTION of its own name", async () => {
    const { db, files } = await migratedDatabase();
    writeFileSync(join(files.functionsDir, "svc_misnamed.sql"), "CREATE OR REPLACE FUNCTION svc_other() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n");
    await expect(migrate(db.pool, files)).rejects.toThrow('function file svc_misnamed.sql must hold exactly one "CREATE OR REPLACE FUNCTION svc_misnamed(" and no other function');
  });
});
