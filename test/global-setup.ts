import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import pg from "pg";
import { migrate } from "../packages/runtime/src/db/migrate.ts";
import { createPool } from "../packages/runtime/src/db/queryable.ts";
import { startEmbeddedPostgres } from "../scripts/embedded-postgres.ts";

/**
 * Chooses the database for the whole test run: DATABASE_URL when set, otherwise an embedded
 * Postgres in a temporary folder. Builds one migrated template database; every test file clones it (CREATE DATABASE … TEMPLATE), which takes ~50 ms.
 */
export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const dir = mkdtempSync(join(tmpdir(), "svc-test-pg-"));
    const embedded = await startEmbeddedPostgres(join(dir, "data"), { persistent: false });
    adminUrl = embedded.url;
    stop = embedded.stop;
  }
  const template = `svc_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const templateUrl = withDatabase(adminUrl, template);
  const pool = createPool(templateUrl, { max: 2, onError: () => {} });
  await migrate(pool);
  await pool.end();
  project.provide("adminUrl", adminUrl);
  project.provide("templateDatabase", template);
  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await stop?.();
  };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
  }
}
