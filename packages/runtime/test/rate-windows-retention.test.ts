// The retention sweep drops a rate key's log (rate_limit_windows) once its newest start is older
// than both the environment's cutoff and the longest period a rate limit may have (7 days): such
// a log counts nothing for any limit. Younger logs, and other environments' logs, stay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { deleteRateWindowBatch } from "../src/engine/retention/delete-rate-windows.ts";

const NOW = new Date("2031-05-20T12:00:00.000Z");
const daysAgo = (days: number) => new Date(NOW.getTime() - days * 86_400_000);
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

async function log(environmentId: string, key: string, newest: Date) {
  await te.db.pool.query(
    `INSERT INTO rate_limit_windows (environment_id, queue_name, rate_key, period_ms, started_at, started_n) VALUES ($1, 'sms', $2, 3600000, ARRAY[$3::timestamptz - interval '1 hour', $3::timestamptz], ARRAY[1, 2])`,
    [environmentId, key, newest],
  );
}
async function keys(environmentId: string): Promise<string[]> {
  const { rows } = await te.db.pool.query(`SELECT rate_key FROM rate_limit_windows WHERE environment_id = $1 ORDER BY rate_key`, [environmentId]);
  return rows.map((r) => r.rate_key);
}

describe("deleteRateWindowBatch", () => {
  it("deletes the logs idle for longer than the cutoff and 7 days, in batches, in one environment", async () => {
    const dev = te.env.id;
    const prod = te.project.environments.prod.id;
    await log(dev, "idle-30d", daysAgo(30));
    await log(dev, "idle-10d", daysAgo(10));
    await log(dev, "idle-8d", daysAgo(8));
    await log(dev, "idle-6d", daysAgo(6));
    await log(dev, "active", daysAgo(0));
    await log(prod, "idle-30d", daysAgo(30));
    // A 1-day retention still keeps 7 days of a log: a period may be that long.
    expect(await deleteRateWindowBatch(te.db.pool, dev, daysAgo(1), NOW, 2)).toBe(2);
    expect(await deleteRateWindowBatch(te.db.pool, dev, daysAgo(1), NOW, 2)).toBe(1);
    expect(await deleteRateWindowBatch(te.db.pool, dev, daysAgo(1), NOW, 2)).toBe(0);
    expect(await keys(dev)).toEqual(["active", "idle-6d"]);
    expect(await keys(prod)).toEqual(["idle-30d"]);
    // A 30-day retention keeps what is younger than 30 days.
    expect(await deleteRateWindowBatch(te.db.pool, prod, daysAgo(31), NOW, 10)).toBe(0);
    expect(await deleteRateWindowBatch(te.db.pool, prod, daysAgo(29), NOW, 10)).toBe(1);
  });
});
