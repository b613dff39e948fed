// worker.abandon() stops at once and leaves in-flight runs to recovery by other workers, as a dead
// process would. A run that came through a pg-boss job is recovered only through that job (its
// heartbeat lapses and it is delivered again): abandoning must not complete it, or the run stays
// EXECUTING for good, with no job and no lease.
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
  it("leaves the pg-boss job of an in-flight run active, for its redelivery to recover the run", async () => {
    // A concurrency key: the run goes through a start job (see start-offers.test.ts).
    const { id } = await triggerRun(te.engine, te.env, "abandon-endless", {}, { concurrencyKey: "k" });
    await eventually(async () => running.has(id));
    const { job_id: jobId } = await getRunRow(te, id);
    expect(jobId).not.toBeNull();
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    await tw.worker.abandon();
    await abandoned;
    // Once drain returns, every job completion the worker had scheduled has been written.
    await tw.worker.drain();
    const { rows } = await te.db.pool.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE id = $1`, [jobId]);
    expect(rows[0]!.state).toBe("active");
    expect((await getRunRow(te, id)).status).toBe("EXECUTING");
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
    expect(row).toMatchObject({ status: "EXECUTING", job_id: null, worker_id: other.worker.id });
    expect(row.lease_expires_at).not.toBeNull();
    await other.kill();
  });
});
