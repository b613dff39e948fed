// worker.abandon() stops at once and leaves in-flight runs to recovery by other workers, as a dead
// process would: a run stays EXECUTING with its lease, which lapses (nobody renews it) and the lapse
// pass recovers the run. Abandoning must not end it, or clear the lease.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const running = new Set<string>();

const endless = task({
  id: "abandon-endless",
  run: async (_: unknown, { ctx }) => {
    running.add(ctx.run.id);
    await new Promise(() => {});
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [endless], { timerLoop: false });
});
afterAll(async () => {
  await tw?.kill();
  await te?.close();
});

describe("abandoning a worker", () => {
  it("leaves a run claimed from runs EXECUTING with its lease, for the lapse to recover the run", async () => {
    // A TTL: not offered, the run is claimed from `runs`.
    const { id } = await triggerRun(te.engine, te.env, "abandon-endless", {}, { ttl: "1h" });
    await eventually(async () => running.has(id));
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await tw.worker.abandon();
    await abandoned;
    // Once drain returns, every write the worker had scheduled has been made.
    await tw.worker.drain();
    const row = await getRunRow(te, id);
    expect(row).toMatchObject({ status: "EXECUTING", worker_id: tw.worker.id });
    expect(row.lease_expires_at).not.toBeNull();
  });

  it("leaves an offered start EXECUTING with its lease, for the lapse to recover the run", async () => {
    const other = await startTestWorker(te, [endless], { timerLoop: false });
    await tw.worker.abandon();
    await te.db.pool.query(`DELETE FROM workers WHERE id = $1`, [tw.worker.id]);
    const { id } = await triggerRun(te.engine, te.env, "abandon-endless", {});
    await eventually(async () => running.has(id));
    const abandoned = other.worker.events.next("runAbandoned", (e) => e.runId === id);
    await other.worker.abandon();
    await abandoned;
    await other.worker.drain();
    const row = await getRunRow(te, id);
    expect(row).toMatchObject({ status: "EXECUTING", worker_id: other.worker.id });
    expect(row.lease_expires_at).not.toBeNull();
    await other.kill();
  });
});
