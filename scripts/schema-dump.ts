// `pnpm schema:dump`: rewrites packages/runtime/schema.sql, the schema of a freshly migrated
// database, from the catalog. Uses DATABASE_URL's server when set, otherwise a throwaway
// embedded Postgres. Commit the result with the migration or function file that changed it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SCHEMA_DUMP_PATH } from "../packages/runtime/src/db/schema-dump.ts";
import { dumpFreshSchema } from "../packages/runtime/src/testing/fresh-schema.ts";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";

let adminUrl = process.env.DATABASE_URL;
let stop: (() => Promise<void>) | undefined;
let dir: string | undefined;
if (!adminUrl) {
  dir = mkdtempSync(join(tmpdir(), "svc-schema-pg-"));
  const embedded = await startEmbeddedPostgres(join(dir, "data"), { persistent: false });
  adminUrl = embedded.url;
  stop = embedded.stop;
}
try {
  writeFileSync(SCHEMA_DUMP_PATH, await dumpFreshSchema(adminUrl));
  console.log(`wrote ${SCHEMA_DUMP_PATH}`);
} finally {
  await stop?.();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
