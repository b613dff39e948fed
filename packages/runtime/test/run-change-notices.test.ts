// What the triggers on `runs` (migration 0038) give realtime subscriptions, whatever statement
// changed a run: a change_xid a snapshot can be compared with, and a NOTIFY only in environments
// an API process watches.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@svc/runtime/testing";
import { readRunShape, upsertWatch, deleteWatches, deleteExpiredWatches, transactionsEndedBelow } from "@svc/runtime/engine";
import { inbox } from "./inbox.ts";

let db: TestDatabase;
let listener: pg.Client;
const notices = inbox<string>();

beforeAll(async () => {
  db = await createTestDatabase();
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on("notification", (n) => notices.push(n.payload ?? ""));
  await listener.query("LISTEN svc_run_changes");
});
afterAll(async () => {
  await listener?.end();
  await db?.drop();
});

async function insertRun(id: string, environmentId: string, tags: string[] = [], batchId: string | null = null) {
  await db.pool.query(
    `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, tags, batch_id) VALUES ($1, $2, 'proj_rt', 'rt-task', 'QUEUED', 'task/rt-task', $3, $4)`,
    [id, environmentId, tags, batchId],
  );
  // What insertRuns writes beside a tagged run (migration 0032): tag shapes find runs through it.
  await db.pool.query(`INSERT INTO run_tags (environment_id, tag, created_at, run_id) SELECT $1, t, now(), $2 FROM unnest($3::text[]) t`, [environmentId, id, tags]);
}

/** A NOTIFY is delivered at its commit: a marker sent after the statement arrives after any notice it made. */
async function noticesUntilMarker(): Promise<string[]> {
  await db.pool.query(`SELECT pg_notify('svc_run_changes', 'marker')`);
  const seen: string[] = [];
  for (let n = await notices.next(); n !== "marker"; n = await notices.next()) seen.push(n);
  return seen;
}

describe("triggers on runs", () => {
  it("stamp every insert and every change a subscriber sees with the top-level transaction, and leave other updates alone", async () => {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { rows: [{ xid }] } = await client.query(`SELECT pg_current_xact_id()::text AS xid`);
      // Inside a subtransaction (as fire-due-schedules inserts): the stamp is still the top-level id.
      await client.query("SAVEPOINT s");
      await client.query(`INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name) VALUES ('run_stamp', 'env_quiet', 'proj_rt', 'rt-task', 'QUEUED', 'task/rt-task')`);
      await client.query("RELEASE SAVEPOINT s");
      await client.query("COMMIT");
      const { rows } = await db.pool.query(`SELECT change_xid::text AS x FROM runs WHERE id = 'run_stamp'`);
      expect(rows[0].x).toBe(xid);
    } finally {
      client.release();
    }
    const stamp = async () => (await db.pool.query(`SELECT change_xid::text AS x FROM runs WHERE id = 'run_stamp'`)).rows[0].x as string;
    const before = await stamp();
    await db.pool.query(`UPDATE runs SET lease_expires_at = now(), updated_at = now() WHERE id = 'run_stamp'`);
    await db.pool.query(`UPDATE runs SET status = 'QUEUED' WHERE id = 'run_stamp'`);
    expect(await stamp()).toBe(before);
    await db.pool.query(`UPDATE runs SET metadata = '{"progress": 1}' WHERE id = 'run_stamp'`);
    const afterMetadata = await stamp();
    expect(BigInt(afterMetadata)).toBeGreaterThan(BigInt(before));
    await db.pool.query(`UPDATE runs SET status = 'EXECUTING', started_at = now() WHERE id = 'run_stamp'`);
    expect(BigInt(await stamp())).toBeGreaterThan(BigInt(afterMetadata));
  });

  it("NOTIFY inserts and changes only in watched environments, with the run's batch and tags, one notice per run of a multi-row INSERT", async () => {
    await insertRun("run_quiet_1", "env_quiet", ["a"]);
    await db.pool.query(`UPDATE runs SET status = 'CANCELED' WHERE id = 'run_quiet_1'`);
    expect(await noticesUntilMarker()).toEqual([]);

    await upsertWatch(db.pool, "env_watched", "api_test", new Date(Date.now() + 60_000));
    await db.pool.query(
      `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, tags, batch_id)
       VALUES ('run_w1', 'env_watched', 'proj_rt', 'rt-task', 'QUEUED', 'task/rt-task', '{a,b}', 'batch_w'),
              ('run_w2', 'env_watched', 'proj_rt', 'rt-task', 'QUEUED', 'task/rt-task', '{}', NULL),
              ('run_q2', 'env_quiet', 'proj_rt', 'rt-task', 'QUEUED', 'task/rt-task', '{}', NULL)`,
    );
    expect((await noticesUntilMarker()).map((n) => JSON.parse(n))).toEqual([
      ["env_watched", "run_w1", "batch_w", ["a", "b"]],
      ["env_watched", "run_w2", null, []],
    ]);
    await db.pool.query(`UPDATE runs SET status = 'EXECUTING' WHERE id IN ('run_w1', 'run_q2')`);
    await db.pool.query(`UPDATE runs SET lease_expires_at = now() WHERE id = 'run_w1'`);
    expect((await noticesUntilMarker()).map((n) => JSON.parse(n))).toEqual([["env_watched", "run_w1", "batch_w", ["a", "b"]]]);

    await deleteWatches(db.pool, "api_test", ["env_watched"]);
    await db.pool.query(`UPDATE runs SET status = 'COMPLETED' WHERE id = 'run_w1'`);
    expect(await noticesUntilMarker()).toEqual([]);
  });

  it("never fail a write for a notice too large to send: the tags are left out of it", async () => {
    await upsertWatch(db.pool, "env_watched", "api_big", new Date(Date.now() + 60_000));
    const tags = Array.from({ length: 80 }, (_, i) => `${i}-${"x".repeat(120)}`);
    await insertRun("run_big", "env_watched", tags);
    await db.pool.query(`UPDATE runs SET status = 'EXECUTING' WHERE id = 'run_big'`);
    expect((await noticesUntilMarker()).map((n) => JSON.parse(n))).toEqual([
      ["env_watched", "run_big", null, null],
      ["env_watched", "run_big", null, null],
    ]);
    await deleteWatches(db.pool, "api_big", null);
  });

  it("let a shape read return exactly what changed since a snapshot, and say when a snapshot is ahead of the database", async () => {
    await insertRun("run_s1", "env_quiet", ["s"], "batch_s");
    await insertRun("run_s2", "env_quiet", ["s"], "batch_s");
    const first = await readRunShape(db.pool, "env_quiet", { kind: "batch", batchId: "batch_s" }, null);
    expect(first.rows.map((r) => r.id)).toEqual(["run_s1", "run_s2"]);
    expect(first.sinceAhead).toBe(false);
    const unchanged = await readRunShape(db.pool, "env_quiet", { kind: "batch", batchId: "batch_s" }, first.snapshot);
    expect(unchanged.rows).toEqual([]);

    // A transaction open across the read: its change is not in the read, and is in the next one.
    const open = await db.pool.connect();
    try {
      await open.query("BEGIN");
      await open.query(`UPDATE runs SET status = 'EXECUTING' WHERE id = 'run_s2'`);
      const during = await readRunShape(db.pool, "env_quiet", { kind: "batch", batchId: "batch_s" }, first.snapshot);
      expect(during.rows).toEqual([]);
      await open.query("COMMIT");
      const after = await readRunShape(db.pool, "env_quiet", { kind: "batch", batchId: "batch_s" }, during.snapshot);
      expect(after.rows.map((r) => [r.id, r.status])).toEqual([["run_s2", "EXECUTING"]]);
      const tagged = await readRunShape(db.pool, "env_quiet", { kind: "tags", tags: ["s"], createdAfter: new Date(0) }, during.snapshot);
      expect(tagged.rows.map((r) => r.id)).toEqual(["run_s2"]);
    } finally {
      open.release();
    }
    const [xmin, xmax] = first.snapshot.split(":").slice(0, 2).map(BigInt);
    const ahead = await readRunShape(db.pool, "env_quiet", { kind: "run", runId: "run_s1" }, `${xmin! + 1_000_000n}:${xmax! + 1_000_000n}:`);
    expect(ahead.sinceAhead).toBe(true);
  });

  it("tell when every transaction below a horizon has ended, and delete expired watches", async () => {
    const open = await db.pool.connect();
    try {
      await open.query("BEGIN");
      await open.query(`SELECT pg_current_xact_id()`);
      const horizon = await upsertWatch(db.pool, "env_quiet", "api_h", new Date(Date.now() - 1000));
      expect(await transactionsEndedBelow(db.pool, horizon)).toBe(false);
      await open.query("COMMIT");
      // Transaction ids are the cluster's: other databases' transactions below the horizon count too.
      await expect.poll(() => transactionsEndedBelow(db.pool, horizon), { timeout: 10_000, interval: 20 }).toBe(true);
    } finally {
      open.release();
    }
    expect(await deleteExpiredWatches(db.pool, new Date())).toBe(1);
  });
});
