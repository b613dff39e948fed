import pg from "pg";
import { randomId } from "../ids.ts";
import { migrate } from "../db/migrate.ts";
import { createPool } from "../db/queryable.ts";
import { dumpSchema } from "../db/schema-dump.ts";

/**
 * Migrates a new, empty database (from template0) on the server of `adminUrl`, dumps its schema
 * and drops it: what packages/runtime/schema.sql must read. No vitest import: `pnpm schema:dump`
 * uses it too.
 */
export async function dumpFreshSchema(adminUrl: string): Promise<string> {
  const name = `svc_schema_${randomId(10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    const pool = createPool(u.toString(), { max: 2, applicationName: "svc-schema-dump", onError: (error) => console.error(`schema dump connection: ${error.message}`) });
    try {
      await migrate(pool);
      return await dumpSchema(pool);
    } finally {
      await pool.end();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => admin.end());
  }
}
