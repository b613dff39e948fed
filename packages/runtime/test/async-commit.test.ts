// Transactions that commit without waiting for the WAL flush (early wake-ups), and flushWal, which
// makes everything committed so far durable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, flushWal, withTransaction, type Pool } from "@svc/runtime/db";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  // One connection: every statement below runs on the connection the transaction used.
  pool = createPool(db.url, { max: 1, onError: () => {} });
  await pool.query(`CREATE TABLE notes (body text)`);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe("withTransaction({ asyncCommit: true })", () => {
  it("turns synchronous_commit off for that transaction only, and commits its writes", async () => {
    const inside = await withTransaction(pool, async (tx) => {
      await tx.query(`INSERT INTO notes VALUES ('early')`);
      return (await tx.query<{ sync: string }>(`SELECT current_setting('synchronous_commit') AS sync`)).rows[0]!.sync;
    }, { asyncCommit: true });
    expect(inside).toBe("off");
    const after = await pool.query(`SELECT current_setting('synchronous_commit') AS sync, (SELECT count(*) FROM notes WHERE body = 'early') AS n`);
    expect(after.rows).toEqual([{ sync: "on", n: 1 }]);
  });

  it("rolls back like any transaction when its work throws", async () => {
    await expect(withTransaction(pool, async (tx) => {
      await tx.query(`INSERT INTO notes VALUES ('lost')`);
      throw new Error("boom");
    }, { asyncCommit: true })).rejects.toThrow("boom");
    const { rows } = await pool.query(`SELECT count(*) AS n, current_setting('synchronous_commit') AS sync FROM notes WHERE body = 'lost'`);
    expect(rows).toEqual([{ n: 0, sync: "on" }]);
  });
});

describe("flushWal", () => {
  it("returns once the WAL is on disk up to everything committed before it", async () => {
    await withTransaction(pool, (tx) => tx.query(`INSERT INTO notes VALUES ('to flush')`), { asyncCommit: true });
    const lsn = (await pool.query<{ lsn: string }>(`SELECT pg_current_wal_insert_lsn()::text AS lsn`)).rows[0]!.lsn;
    await flushWal(pool);
    const { rows } = await pool.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS durable`, [lsn]);
    expect(rows).toEqual([{ durable: true }]);
  });
});
