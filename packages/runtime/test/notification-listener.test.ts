// The worker's LISTEN connection: when Postgres drops it (a restart, a failover, an idle-session
// kill), it reconnects with backoff, tells its owner (who re-checks what it may have missed), and
// notifications flow again on the new connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotificationListener } from "@svc/runtime/db";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { inbox } from "./inbox.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

async function listenerBackends(): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-worker-listen'`,
  );
  return rows.map((r) => r.pid);
}

describe("NotificationListener", () => {
  it("reconnects after its connection is terminated, and receives notifications again", async () => {
    const received = inbox<string>();
    const events = inbox<string>();
    const listener = new NotificationListener({
      url: db.url,
      channels: ["svc_test_channel"],
      onNotification: (_channel, payload) => received.push(payload),
      onDisconnect: () => events.push("disconnected"),
      onReconnect: () => events.push("reconnected"),
      onError: () => {},
    });
    await listener.start();
    try {
      await db.pool.query(`SELECT pg_notify('svc_test_channel', 'before')`);
      expect(await received.next()).toBe("before");

      const [pid] = await listenerBackends();
      await db.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
      expect(await events.next()).toBe("disconnected");
      expect(await events.next()).toBe("reconnected");
      expect(listener.connected).toBe(true);

      await db.pool.query(`SELECT pg_notify('svc_test_channel', 'after')`);
      expect(await received.next()).toBe("after");
      // One connection: the terminated one is gone and no extra one was left behind.
      const backends = await listenerBackends();
      expect(backends).toHaveLength(1);
      expect(backends[0]).not.toBe(pid);
    } finally {
      await listener.stop();
    }
    expect(await listenerBackends()).toEqual([]);
  });

  it("holds a session lock while connected, a new one per connection, and none once stopped", async () => {
    const events = inbox<string>();
    const listener = new NotificationListener({
      url: db.url,
      channels: ["svc_test_channel"],
      onNotification: () => {},
      onReconnect: () => events.push("reconnected"),
      onError: () => {},
      holdSessionLock: true,
    });
    // Whether another session could take the lock now (false: the listener's connection holds it).
    const free = async (key: string) => (await db.pool.query<{ free: boolean }>(`SELECT pg_try_advisory_xact_lock_shared($1::bigint) AS free`, [key])).rows[0]!.free;
    await listener.start();
    const first = listener.sessionLock!;
    expect(first).toMatch(/^-?\d+$/);
    expect(await free(first)).toBe(false);
    const [pid] = await listenerBackends();
    await db.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
    expect(await events.next()).toBe("reconnected");
    const second = listener.sessionLock!;
    expect(second).not.toBe(first);
    expect(await free(first)).toBe(true);
    expect(await free(second)).toBe(false);
    await listener.stop();
    expect(listener.sessionLock).toBeNull();
    for (const deadline = Date.now() + 5000; Date.now() < deadline && !(await free(second)); ) await new Promise((r) => setImmediate(r));
    expect(await free(second)).toBe(true);
  });

  it("closes a connection that came up but could not LISTEN, instead of leaving it open", async () => {
    // LISTEN "" is refused by Postgres (a zero-length identifier) after the connection is up.
    const listener = new NotificationListener({ url: db.url, channels: ["svc_ok", ""], onNotification: () => {}, onError: () => {} });
    await expect(listener.start()).rejects.toThrow(/zero-length/);
    expect(listener.connected).toBe(false);
    // The backend exits once the server reads the client's Terminate: poll until it has (5 s at most).
    for (const deadline = Date.now() + 5000; Date.now() < deadline && (await listenerBackends()).length > 0; ) await new Promise((r) => setImmediate(r));
    expect(await listenerBackends()).toEqual([]);
  });
});
