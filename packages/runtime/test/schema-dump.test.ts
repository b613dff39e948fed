// packages/runtime/schema.sql is the schema a fresh database gets from the migrations and
// function files, so that every change to them shows its net effect on the schema in review.
import { readFileSync } from "node:fs";
import { expect, inject, it } from "vitest";
import { SCHEMA_DUMP_PATH } from "@svc/runtime/db";
import { dumpFreshSchema } from "../src/testing/fresh-schema.ts";

it("packages/runtime/schema.sql is the schema of a freshly migrated database", async () => {
  const current = await dumpFreshSchema(inject("adminUrl"));
  const committed = readFileSync(SCHEMA_DUMP_PATH, "utf8");
  expect(current, "packages/runtime/schema.sql is out of date: run `pnpm schema:dump` and commit the result (diff: - committed, + current)").toBe(committed);
});
