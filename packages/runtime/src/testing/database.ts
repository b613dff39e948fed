import pg from "pg";
import { inject } from "vitest";
import { randomId } from "../ids.ts";
import { createPool } from "../db/queryable.ts";

export interface TestDatabase {
  url: string;
  pool: pg.Pool;
  /** Drops the database; skipped when SVC_KEEP_TEST_DB=1 so a failure can be inspected. */
  drop(): Promise<void>;
}

/**
 * Clones the migrated template into a fresh database for one test file; with `empty`, a database
 * with no schema at all (from template0), for tests of the migrator.
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject("adminUrl");
  const template = inject("templateDatabase");
  const name = `svc_t_${randomId(10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${options.empty ? "template0" : template}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = createPool(url, {
    max: 10,
    applicationName: "svc-test",
    // Tests that stop Postgres break these connections on purpose; the statement in flight fails
    // with the error, which is what those tests look at.
    onError: () => {},
  });
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      if (process.env.SVC_KEEP_TEST_DB === "1") return;
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await c.end();
    },
  };
}
