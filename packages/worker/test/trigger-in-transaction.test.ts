// Triggering inside the caller's own transaction (svc_trigger, the client's `{ tx }`), against a
// running worker: the run exists, and is run, if and only if the caller's transaction commits.
// Rollbacks, a backend killed between its write and its COMMIT, a transaction that stays open
// longer than a worker's lease, two transactions with one idempotency key, a database trigger on a
// user table, and a batch. docs/trigger-in-transaction.md shows the same in prose.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient, BadRequestError, AuthenticationError, task } from "@svc/runtime";
import { CHANNELS, CLAIMED_COLUMNS } from "@svc/runtime/engine";
import { blockedBackends, eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const WRITE_THEN_HANG = fileURLToPath(new URL("./fixtures/tx-trigger/write-then-hang.mjs", import.meta.url));
const LEASE_MS = 1000;

const payloads = new Map<string, unknown>();
const fulfil = task({
  id: "fulfil",
  run: async (payload: unknown, { ctx }) => {
    payloads.set(ctx.run.id, payload);
    return "shipped";
  },
});

/** A queue with a concurrencyLimit: its runs are claimed by the queue's own claim, never offered. */
let running = 0;
let mostAtOnce = 0;
const limited = task({
  id: "fulfil-limited",
  queue: { name: "fulfilment", concurrencyLimit: 1 },
  run: async () => {
    mostAtOnce = Math.max(mostAtOnce, ++running);
    await new Promise((resolve) => setImmediate(resolve));
    running--;
  },
});

let te: TestEngine;
let w: TestWorker;
const started: string[] = [];
/** How each run's first attempt reached the worker: "offer" (no claim statement) or a claim. */
const via = new Map<string, string | undefined>();
let client: ApiClient;

beforeAll(async () => {
  te = await startTestEngine();
  await te.db.pool.query(`CREATE TABLE orders (id text PRIMARY KEY, item text NOT NULL)`);
  // A worker that only hears of runs through NOTIFYs (no polls), with a short lease.
  w = await startTestWorker(te, [fulfil, limited], { leaseMs: LEASE_MS, pollIntervalMs: 600_000 });
  w.worker.events.on("runStarted", (e) => {
    started.push(e.runId);
    via.set(e.runId, e.via);
  });
  client = new ApiClient({ baseURL: "http://svc.invalid", secretKey: te.project.environments.dev.secretKey });
});
afterAll(async () => {
  await w?.stop();
  await te?.close();
});

/** A `pg` client of its own, as a backend's transaction holds one. */
async function backend(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: te.db.url });
  await c.connect();
  return c;
}

async function runExists(id: string): Promise<boolean> {
  return ((await te.db.pool.query(`SELECT 1 FROM runs WHERE id = $1`, [id])).rowCount ?? 0) > 0;
}

const completed = (id: string) => eventually(async () => (await getRunRow(te, id))?.status === "COMPLETED", 20_000);

/**
 * Notifications on `channels` from now until a marker this function sends after `act`: NOTIFYs are
 * delivered in commit order, so whatever `act`'s transaction sent arrives before the marker.
 */
async function notificationsDuring(channels: string[], act: () => Promise<void>): Promise<{ channel: string; payload?: string }[]> {
  const listener = await backend();
  const heard: { channel: string; payload?: string }[] = [];
  let marked: () => void = () => {};
  const marker = new Promise<void>((resolve) => (marked = resolve));
  listener.on("notification", (n) => (n.payload === "marker" ? marked() : heard.push({ channel: n.channel, payload: n.payload })));
  for (const channel of channels) await listener.query(`LISTEN ${channel}`);
  try {
    await act();
    await te.db.pool.query(`SELECT pg_notify($1, 'marker')`, [channels[0]]);
    await marker;
    return heard;
  } finally {
    await listener.end();
  }
}

describe("a run triggered inside the caller's transaction", () => {
  it("is run after COMMIT, not before, even when the transaction stays open longer than the worker's lease", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      await tx.query(`INSERT INTO orders (id, item) VALUES ('o-1', 'book')`);
      const { rows } = await tx.query(`SELECT run_id, is_cached FROM svc_trigger($1, 'fulfil', '{"orderId":"o-1"}', '{"tags":"order"}')`, [te.env.id]);
      const runId = rows[0].run_id as string;
      expect(rows[0].is_cached).toBe(false);
      // Inside the transaction: QUEUED, offered to nobody, holding no lease.
      const inside = (await tx.query(`SELECT status, worker_id, lease_expires_at, offered_at FROM runs WHERE id = $1`, [runId])).rows[0];
      expect(inside).toEqual({ status: "QUEUED", worker_id: null, lease_expires_at: null, offered_at: null });
      // Outside it, nothing yet: no worker can see the run, let alone start it. Two leases of wall
      // time pass (the hazard is a lease running while the transaction is open, which only wall time shows).
      await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS + 500));
      expect(await runExists(runId)).toBe(false);
      expect(started).not.toContain(runId);
      const beforeCommit = Date.now();
      await tx.query("COMMIT");
      await completed(runId);
      const run = await getRunRow(te, runId);
      expect(run).toMatchObject({ attempt_number: 1, worker_id: w.worker.id, tags: ["order"] });
      // Offered to the worker at COMMIT (no claim statement), its lease and start measured from then.
      expect(via.get(runId)).toBe("offer");
      expect((run.started_at as Date).getTime()).toBeGreaterThanOrEqual(beforeCommit - 50);
      expect(payloads.get(runId)).toEqual({ orderId: "o-1" });
      const attempts = await te.db.pool.query(`SELECT status FROM run_attempts WHERE run_id = $1`, [runId]);
      expect(attempts.rows).toEqual([{ status: "COMPLETED" }]);
    } finally {
      await tx.end();
    }
  });

  it("leaves no run, no order and no NOTIFY when the transaction rolls back", async () => {
    let runId = "";
    const heard = await notificationsDuring(["svc_runs_ready", "svc_timers"], async () => {
      const tx = await backend();
      try {
        await tx.query("BEGIN");
        await tx.query(`INSERT INTO orders (id, item) VALUES ('o-rolled-back', 'book')`);
        runId = (await tx.query(`SELECT run_id FROM svc_trigger($1, 'fulfil', '{}')`, [te.env.id])).rows[0].run_id;
        await tx.query(`SELECT run_id FROM svc_trigger($1, 'fulfil', '{}', '{"delay":"1h"}')`, [te.env.id]);
        await tx.query("ROLLBACK");
      } finally {
        await tx.end();
      }
    });
    expect(heard).toEqual([]);
    expect(await runExists(runId)).toBe(false);
    expect((await te.db.pool.query(`SELECT 1 FROM orders WHERE id = 'o-rolled-back'`)).rowCount).toBe(0);
    expect(started).not.toContain(runId);
  });

  it("sends the start at COMMIT: the run, claimed, on its worker's own channel, or svc_timers for a delayed run", async () => {
    let runId = "";
    const offers = `${CHANNELS.offersPrefix}${w.worker.id}`;
    const heard = await notificationsDuring(["svc_runs_ready", "svc_timers", offers], async () => {
      const tx = await backend();
      try {
        await tx.query("BEGIN");
        runId = (await tx.query(`SELECT run_id FROM svc_trigger($1, 'fulfil', '{"n":1}', '{"tags":["t"]}')`, [te.env.id])).rows[0].run_id;
        await tx.query(`SELECT run_id FROM svc_trigger($1, 'fulfil', '{}', '{"delay":"1h"}')`, [te.env.id]);
        await tx.query("COMMIT");
        await completed(runId);
      } finally {
        await tx.end();
      }
    });
    // The delayed run's NOTIFY was sent by its statement; the offer, at COMMIT.
    expect(heard.map((h) => h.channel)).toEqual(["svc_timers", offers]);
    // The offer a trigger over HTTP sends (engine/runs/transitions/offer-start.ts): the claimed
    // columns of the run, no ledger, a start.
    const offer = JSON.parse(heard[1]!.payload!) as { run: Record<string, unknown>; ledger: unknown; start: boolean };
    expect(Object.keys(offer.run).sort()).toEqual([...CLAIMED_COLUMNS].sort());
    expect(offer).toMatchObject({ ledger: null, start: true, run: { id: runId, environment_id: te.env.id, task_identifier: "fulfil", attempt_number: 1, payload: '{"n": 1}', tags: ["t"], ledger_epoch: 0 } });
    expect(via.get(runId)).toBe("offer");
  });

  it("wakes every worker at COMMIT instead when the transaction is REPEATABLE READ or SERIALIZABLE: its snapshot is not now", async () => {
    for (const isolation of ["REPEATABLE READ", "SERIALIZABLE"]) {
      let runId = "";
      const heard = await notificationsDuring(["svc_runs_ready", `${CHANNELS.offersPrefix}${w.worker.id}`], async () => {
        const tx = await backend();
        try {
          await tx.query(`BEGIN ISOLATION LEVEL ${isolation}`);
          runId = (await tx.query(`SELECT run_id FROM svc_trigger($1, 'fulfil', '{}')`, [te.env.id])).rows[0].run_id;
          await tx.query("COMMIT");
          await completed(runId);
        } finally {
          await tx.end();
        }
      });
      expect(heard).toEqual([{ channel: "svc_runs_ready", payload: te.env.id }]);
      expect(via.get(runId)).not.toBe("offer");
    }
  });

  it("leaves no run when the backend dies between its write and its COMMIT", async () => {
    const child = spawn(process.execPath, [WRITE_THEN_HANG, te.db.url, te.env.id, "o-crash"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const runId = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = /triggered (run_\w+)/.exec(out);
        if (match) resolve(match[1]!);
      });
      child.on("exit", (code) => reject(new Error(`the backend exited (${code}) before triggering:\n${out}`)));
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    // Postgres rolls the dead backend's transaction back when it notices the connection closed.
    await eventually(async () => (await te.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'svc-test-write-then-hang'`)).rowCount === 0);
    expect(await runExists(runId)).toBe(false);
    expect((await te.db.pool.query(`SELECT 1 FROM orders WHERE id = 'o-crash'`)).rowCount).toBe(0);
    expect(started).not.toContain(runId);
  });

  it("answers a second transaction's idempotency key with the first's run once the first commits, and makes its own if the first rolls back", async () => {
    const [a, b] = [await backend(), await backend()];
    try {
      for (const outcome of ["COMMIT", "ROLLBACK"] as const) {
        const key = `pay-${outcome}`;
        await a.query("BEGIN");
        await b.query("BEGIN");
        const first = (await a.query(`SELECT * FROM svc_trigger($1, 'fulfil', '{"by":"a"}', $2::jsonb)`, [te.env.id, JSON.stringify({ idempotencyKey: key })])).rows[0];
        // b's insert of the same key waits for a's transaction to end.
        const second = b.query(`SELECT * FROM svc_trigger($1, 'fulfil', '{"by":"b"}', $2::jsonb)`, [te.env.id, JSON.stringify({ idempotencyKey: key })]);
        await eventually(async () => (await blockedBackends(te)) === 1);
        await a.query(outcome);
        const answered = (await second).rows[0];
        await b.query("COMMIT");
        if (outcome === "COMMIT") {
          expect(answered).toEqual({ run_id: first.run_id, is_cached: true });
          await completed(first.run_id);
        } else {
          expect(answered.is_cached).toBe(false);
          expect(await runExists(first.run_id)).toBe(false);
          await completed(answered.run_id);
          expect(payloads.get(answered.run_id)).toEqual({ by: "b" });
        }
      }
    } finally {
      await a.end();
      await b.end();
    }
  });

  it("can come from a database trigger on the user's own table", async () => {
    await te.db.pool.query(`
      CREATE TABLE shipments (id bigint PRIMARY KEY, address text NOT NULL, run_id text);
      CREATE FUNCTION shipments_start_fulfilment() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT t.run_id INTO NEW.run_id FROM svc_trigger('${te.env.projectRef}/dev', 'fulfil',
          jsonb_build_object('shipmentId', NEW.id, 'address', NEW.address),
          jsonb_build_object('idempotencyKey', 'shipment-' || NEW.id, 'tags', 'shipment')) t;
        RETURN NEW;
      END $$;
      CREATE TRIGGER shipments_start_fulfilment BEFORE INSERT ON shipments FOR EACH ROW EXECUTE FUNCTION shipments_start_fulfilment();`);
    const { rows } = await te.db.pool.query(`INSERT INTO shipments (id, address) VALUES (1, '1 Main St') RETURNING run_id`);
    const runId = rows[0].run_id as string;
    await completed(runId);
    expect(payloads.get(runId)).toEqual({ shipmentId: 1, address: "1 Main St" });
    expect((await getRunRow(te, runId)).idempotency_key).toBe("shipment-1");
    // An insert that rolls back starts nothing.
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      const rolledBack = (await tx.query(`INSERT INTO shipments (id, address) VALUES (2, 'nowhere') RETURNING run_id`)).rows[0].run_id;
      await tx.query("ROLLBACK");
      expect(await runExists(rolledBack)).toBe(false);
    } finally {
      await tx.end();
    }
    // A savepoint rolled back inside a committed transaction takes its shipment's run back, and only it.
    const tx2 = await backend();
    try {
      await tx2.query("BEGIN");
      const kept = (await tx2.query(`INSERT INTO shipments (id, address) VALUES (3, 'kept') RETURNING run_id`)).rows[0].run_id;
      await tx2.query("SAVEPOINT s");
      const dropped = (await tx2.query(`INSERT INTO shipments (id, address) VALUES (4, 'dropped') RETURNING run_id`)).rows[0].run_id;
      await tx2.query("ROLLBACK TO SAVEPOINT s");
      await tx2.query("COMMIT");
      await completed(kept);
      expect(await runExists(dropped)).toBe(false);
    } finally {
      await tx2.end();
    }
  });
});

describe("a run of a queue with a concurrencyLimit, triggered in a transaction", () => {
  it("is claimed by the queue's claim after COMMIT, within the limit, per concurrency key", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      const { rows } = await tx.query(
        `SELECT b.run_ids FROM svc_batch_trigger($1, $2::jsonb) b`,
        [te.env.id, JSON.stringify(Array.from({ length: 4 }, (_, i) => ({ task: "fulfil-limited", payload: { i }, options: { concurrencyKey: `k${i % 2}` } })))],
      );
      const ids = rows[0].run_ids as string[];
      expect((await tx.query(`SELECT DISTINCT queue_name, claim_from_runs FROM runs WHERE id = ANY($1)`, [ids])).rows).toEqual([
        { queue_name: "fulfilment", claim_from_runs: false },
      ]);
      await tx.query("COMMIT");
      for (const id of ids) await completed(id);
      expect(mostAtOnce).toBeLessThanOrEqual(2);
    } finally {
      await tx.end();
    }
  });
});

describe("the client's tasks.trigger(…, { tx })", () => {
  it("triggers in the caller's transaction, with the client's secret key naming the environment", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      await tx.query(`INSERT INTO orders (id, item) VALUES ('o-client', 'lamp')`);
      const handle = await client.tasks.trigger("fulfil", { orderId: "o-client", at: new Date("2026-01-01T00:00:00Z") }, { tx, tags: ["client"], idempotencyKey: "o-client" });
      expect(handle).toEqual({ id: expect.stringMatching(/^run_/), isCached: false });
      expect(await client.tasks.trigger("fulfil", {}, { tx, idempotencyKey: "o-client" })).toEqual({ id: handle.id, isCached: true });
      expect(await runExists(handle.id)).toBe(false);
      await tx.query("COMMIT");
      await completed(handle.id);
      expect(payloads.get(handle.id)).toEqual({ orderId: "o-client", at: "2026-01-01T00:00:00.000Z" });
      expect((await getRunRow(te, handle.id)).environment_id).toBe(te.env.id);
    } finally {
      await tx.end();
    }
  });

  it("triggers a batch whose runs are run after COMMIT", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      const batch = await client.tasks.batchTrigger("fulfil", [{ payload: { n: 1 } }, { payload: { n: 2 }, options: { tags: "second" } }], { tx, idempotencyKey: "b-1" });
      expect(batch).toMatchObject({ batchId: expect.stringMatching(/^batch_/), runCount: 2, isCached: false, idempotencyKey: "b-1" });
      expect(batch.runIds).toHaveLength(2);
      for (const id of batch.runIds!) expect(await runExists(id)).toBe(false);
      await tx.query("COMMIT");
      for (const id of batch.runIds!) await completed(id);
      expect(batch.runIds!.map((id) => payloads.get(id))).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      await tx.end();
    }
  });

  it("takes the rate key and the named limits, as the HTTP trigger does", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      const handle = await client.tasks.trigger("fulfil", {}, { tx, rateLimit: { key: "customer-1" }, concurrency: "image-api" });
      const row = (await tx.query(`SELECT rate_limit_key, concurrency_limits FROM runs WHERE id = $1`, [handle.id])).rows[0];
      expect(row).toEqual({ rate_limit_key: "customer-1", concurrency_limits: ["image-api"] });
      await tx.query("ROLLBACK");
    } finally {
      await tx.end();
    }
  });

  it("throws BadRequestError for options svc_trigger refuses, and AuthenticationError for a key of no environment here", async () => {
    const tx = await backend();
    try {
      await tx.query("BEGIN");
      await expect(client.tasks.trigger("fulfil", {}, { tx, ttl: "soon" })).rejects.toBeInstanceOf(BadRequestError);
      await tx.query("ROLLBACK");
      await tx.query("BEGIN");
      await expect(client.tasks.trigger("fulfil", {}, { tx, machine: "large-1x" })).rejects.toThrow(/options\.machine: not an option of a trigger in SQL/);
      await tx.query("ROLLBACK");
      const stranger = new ApiClient({ baseURL: "http://svc.invalid", secretKey: "svc_dev_notakeyofthisdatabase" });
      await expect(stranger.tasks.trigger("fulfil", {}, { tx })).rejects.toBeInstanceOf(AuthenticationError);
    } finally {
      await tx.end();
    }
  });
});
