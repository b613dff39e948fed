// One LISTEN connection for every part of a process that wants notices: each part gets its own
// channel's notices, and every part hears when the connection drops and comes back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedListener } from "@svc/runtime/db";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { inbox } from "./inbox.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

async function backends(): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-test-shared'`);
  return rows.map((r) => r.pid);
}

describe("SharedListener", () => {
  it("routes each channel's notices to its parts over one connection, and tells every part of a reconnect", async () => {
    const keys = inbox<string>();
    const records = inbox<string>();
    const alsoRecords = inbox<string>();
    const events = inbox<string>();
    const listener = new SharedListener({ url: db.url, onError: () => {}, applicationName: "svc-test-shared" });
    listener.route("svc_test_keys", { onNotification: (p) => keys.push(p), onDisconnect: () => events.push("keys: disconnected"), onReconnect: () => events.push("keys: reconnected") });
    listener.route("svc_test_records", { onNotification: (p) => records.push(p), onReconnect: () => events.push("records: reconnected") });
    listener.route("svc_test_records", { onNotification: (p) => alsoRecords.push(p) });
    expect(listener.connected).toBe(false);
    await listener.start();
    try {
      expect(listener.connected).toBe(true);
      expect(() => listener.route("svc_test_late", { onNotification: () => {} })).toThrow(/after start/);
      const [pid, ...others] = await backends();
      expect(others).toEqual([]);

      await db.pool.query(`SELECT pg_notify('svc_test_keys', 'k1'), pg_notify('svc_test_records', 'r1')`);
      expect(await keys.next()).toBe("k1");
      expect(await records.next()).toBe("r1");
      expect(await alsoRecords.next()).toBe("r1");
      // Nothing crossed over: a channel's notice reaches its own routes only.
      expect([keys.size, records.size, alsoRecords.size]).toEqual([0, 0, 0]);

      await db.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
      const heard = [await events.next(), await events.next(), await events.next()];
      expect(heard).toEqual(["keys: disconnected", "keys: reconnected", "records: reconnected"]);
      await db.pool.query(`SELECT pg_notify('svc_test_records', 'r2')`);
      expect(await records.next()).toBe("r2");
      expect((await backends()).filter((p) => p !== pid)).toHaveLength(1);
    } finally {
      await listener.stop();
    }
    expect(listener.connected).toBe(false);
    expect(await backends()).toEqual([]);
  });
});
