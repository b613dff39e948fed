// A run triggered inside a backend's transaction (svc_trigger) on a real worker process: before any
// worker has its task it reads PENDING_VERSION, as a run triggered over HTTP does, and the worker
// that starts with the task runs it; once the worker runs, a run triggered in a transaction is run
// when that transaction commits and not before.
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retrieveRun } from "@svc/runtime/engine";
import { eventually, getRunRow, startTestEngine, type TestEngine } from "./harness.ts";
import { spawnWorker, type WorkerProcess } from "./processes.ts";

const CONFIG = fileURLToPath(new URL("./fixtures/tx-trigger/svc.config.ts", import.meta.url));

let te: TestEngine;
let worker: WorkerProcess | undefined;
let tx: pg.Client;

beforeAll(async () => {
  te = await startTestEngine();
  await te.db.pool.query(`CREATE TABLE orders (id text PRIMARY KEY)`);
  tx = new pg.Client({ connectionString: te.db.url });
  await tx.connect();
});
afterAll(async () => {
  await tx?.end();
  worker?.child.kill("SIGKILL");
  await worker?.exited;
  await te?.close();
});

/** Writes an order and triggers its shipping in one transaction; returns the run id, the transaction still open. */
async function orderInTransaction(orderId: string): Promise<string> {
  await tx.query("BEGIN");
  await tx.query(`INSERT INTO orders (id) VALUES ($1)`, [orderId]);
  const { rows } = await tx.query(`SELECT run_id FROM svc_trigger($1, 'ship-order', $2::jsonb)`, [`${te.env.projectRef}/dev`, JSON.stringify({ orderId })]);
  return rows[0].run_id;
}

const completed = (id: string) => eventually(async () => (await getRunRow(te, id))?.status === "COMPLETED", 60_000);

describe("svc_trigger with a worker process", () => {
  it("reads PENDING_VERSION until a worker with the task starts, which then runs it", async () => {
    const id = await orderInTransaction("o-early");
    await tx.query("COMMIT");
    expect((await retrieveRun(te.engine, te.env.id, id)).run.status).toBe("PENDING_VERSION");
    worker = spawnWorker(te.db.url, te.project.environments.dev.secretKey, CONFIG);
    await worker.ready;
    await completed(id);
    expect(JSON.parse((await getRunRow(te, id)).output!)).toEqual({ json: { shipped: "o-early" } });
  }, 90_000);

  it("is run by the running worker process once the transaction commits, not before", async () => {
    const id = await orderInTransaction("o-late");
    // A run triggered after it, in a transaction of its own that commits at once, is run: the
    // worker process is claiming. The first, its transaction still open, is seen by nobody.
    const probe = (await te.db.pool.query(`SELECT run_id FROM svc_trigger($1, 'ship-order', '{"orderId":"probe"}')`, [te.env.id])).rows[0].run_id;
    await completed(probe);
    expect((await te.db.pool.query(`SELECT 1 FROM runs WHERE id = $1`, [id])).rowCount).toBe(0);
    expect((await tx.query(`SELECT status, worker_id FROM runs WHERE id = $1`, [id])).rows).toEqual([{ status: "QUEUED", worker_id: null }]);
    expect(worker!.output()).not.toContain(id);
    await tx.query("COMMIT");
    await completed(id);
    const run = await getRunRow(te, id);
    expect(run.attempt_number).toBe(1);
    expect(JSON.parse(run.output!)).toEqual({ json: { shipped: "o-late" } });
  }, 60_000);
});
