// A start queue's fetch claims the runs of the jobs it takes, in the same statement: each job comes
// back with its run's claim, or null where the run could not be claimed, and the worker executes
// that claim instead of claiming again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { startQueueName } from "@svc/queue";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
/** Every job a fetch returned, with what came with it. */
const fetched: { id: string; data: { runId: string }; svc_with?: Record<string, unknown> | null }[] = [];
const finished = new Set<string>();

const noop = task({ id: "claimed-in-fetch", run: async () => "done" });

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [noop], { pollIntervalMs: 100 }, (boss) => {
    const fetch = boss.fetch.bind(boss);
    boss.fetch = (async (...args: Parameters<typeof fetch>) => {
      const jobs = await fetch(...args);
      fetched.push(...(jobs as unknown as typeof fetched));
      return jobs;
    }) as typeof boss.fetch;
  });
  tw.worker.events.on("runFinished", (e) => finished.add(e.runId));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("claims in the fetch statement", () => {
  it("returns each start job with its run's claim, which the worker executes", async () => {
    // A concurrency key: the run goes through a start job (see start-offers.test.ts).
    const run = await triggerRun(te.engine, te.env, "claimed-in-fetch", {}, { concurrencyKey: "k" });
    await eventually(async () => finished.has(run.id));
    const job = fetched.find((j) => j.data.runId === run.id);
    expect(job?.svc_with).toMatchObject({ id: run.id, previous_status: "QUEUED", attempt_number: 1, task_identifier: "claimed-in-fetch" });
    expect(job!.svc_with!.claim_token).toMatch(/^[0-9a-f-]{36}$/);
    const row = await getRunRow(te, run.id);
    expect(row).toMatchObject({ status: "COMPLETED", attempt_number: 1, job_id: job!.id });
  });

  it("returns null for a job whose run cannot be claimed (already finished), and nothing runs again", async () => {
    // A concurrency key: the run goes through a start job (see start-offers.test.ts).
    const run = await triggerRun(te.engine, te.env, "claimed-in-fetch", {}, { concurrencyKey: "k" });
    await eventually(async () => finished.has(run.id));
    const row = await getRunRow(te, run.id);
    // A second start job for the finished run (a duplicate delivery), found by the next poll.
    const { rows } = await te.db.pool.query<{ id: string }>(
      `INSERT INTO pgboss.job_common (id, name, data) VALUES (gen_random_uuid(), $1, $2) RETURNING id`,
      [startQueueName(te.env.id, row.queue_name), { runId: run.id, kind: "start" }],
    );
    const duplicate = rows[0]!.id;
    const job = await eventually(async () => fetched.find((j) => j.id === duplicate));
    expect(job.svc_with).toBeNull();
    await eventually(async () => (await te.db.pool.query(`SELECT 1 FROM pgboss.job_common WHERE id = $1`, [duplicate])).rowCount === 0);
    expect(await getRunRow(te, run.id)).toMatchObject({ status: "COMPLETED", attempt_number: 1, updated_at: row.updated_at });
  });
});
