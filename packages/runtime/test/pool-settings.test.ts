// The settings every svc connection starts with (db/queryable.ts, DEFAULT_SETTINGS): no JIT, which
// compiled a limited queue's claim over a deep backlog on every call (339 ms for a 4 ms statement),
// and a pool's own settings beside it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createPool, type Pool } from "@svc/runtime/db";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";

let db: TestDatabase;
let pool: Pool;
let tuned: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, { max: 1, onError: () => {} });
  tuned = createPool(db.url, { max: 1, settings: { synchronous_commit: "off" }, onError: () => {} });
});
afterAll(async () => {
  await pool?.end();
  await tuned?.end();
  await db?.drop();
});

/** Whether Postgres would JIT-compile a statement whose plan costs far more than jit_above_cost (planned, not run). */
async function compiles(q: { query: pg.Pool["query"] }): Promise<boolean> {
  const { rows } = await q.query(`EXPLAIN SELECT count(*) FROM generate_series(1, 1000) a, generate_series(1, 1000) b, generate_series(1, 100) c`);
  return rows.some((r) => String(r["QUERY PLAN"]).startsWith("JIT:"));
}

describe("an svc pool's connections", () => {
  it("never JIT-compile a statement, where a connection with the server's defaults does", async () => {
    const plain = new pg.Client({ connectionString: db.url });
    await plain.connect();
    try {
      // The control: the server's defaults (jit on, jit_above_cost 100,000) compile this plan, on
      // a server built with JIT (pg_jit_available; one without compiles nothing anyway).
      const { rows } = await plain.query("SELECT current_setting('jit') AS jit, pg_jit_available() AS available");
      expect(rows[0].jit).toBe("on");
      expect(await compiles(plain)).toBe(rows[0].available);
    } finally {
      await plain.end();
    }
    expect((await pool.query("SHOW jit")).rows[0].jit).toBe("off");
    expect(await compiles(pool)).toBe(false);
  });

  it("take a pool's own settings besides", async () => {
    const { rows } = await tuned.query(`SELECT current_setting('jit') AS jit, current_setting('synchronous_commit') AS sync`);
    expect(rows).toEqual([{ jit: "off", sync: "off" }]);
  });
});
