// The worker's retention loop: configured from RUN_RETENTION_*, it sweeps on a loop of its own
// and tells what it deleted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWorkerConfig } from "../src/config.ts";
import { startTestEngine, startTestWorker, TEST_ENCRYPTION_KEY, type TestEngine } from "./harness.ts";

let te: TestEngine;
beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

describe("retention configuration", () => {
  const base = { DATABASE_URL: "postgres://127.0.0.1/x", SVC_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
  it("keeps finished runs 30 days and sweeps every 10 minutes unless told otherwise; 0 keeps them forever", () => {
    expect(parseWorkerConfig(base)).toMatchObject({ RUN_RETENTION_DAYS: 30, RUN_RETENTION_INTERVAL_SECONDS: 600 });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_DAYS: "", RUN_RETENTION_INTERVAL_SECONDS: "" })).toMatchObject({ RUN_RETENTION_DAYS: 30, RUN_RETENTION_INTERVAL_SECONDS: 600 });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_DAYS: "0", RUN_RETENTION_INTERVAL_SECONDS: "60" })).toMatchObject({ RUN_RETENTION_DAYS: 0, RUN_RETENTION_INTERVAL_SECONDS: 60 });
    for (const bad of ["-1", "1.5", "forever", "36501"]) expect(() => parseWorkerConfig({ ...base, RUN_RETENTION_DAYS: bad }), bad).toThrow(/RUN_RETENTION_DAYS/);
    expect(() => parseWorkerConfig({ ...base, RUN_RETENTION_INTERVAL_SECONDS: "0" })).toThrow(/RUN_RETENTION_INTERVAL_SECONDS/);
  });
});

describe("the retention loop", () => {
  it("sweeps on its own loop once the worker starts, and stops with it", async () => {
    // Finished 40 days ago (by the real clock: this worker runs its loops).
    await te.db.pool.query(
      `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, created_at, updated_at, finished_at)
       SELECT 'run_aged_' || i, e.id, e.project_id, 'aged', 'COMPLETED', 'task/aged', now() - interval '40 days', now() - interval '40 days', now() - interval '40 days'
       FROM environments e, generate_series(1, 3) i WHERE e.id = $1`,
      [te.env.id],
    );
    const worker = await startTestWorker(te, [], { retention: { defaultDays: 30, intervalMs: 600_000 } });
    try {
      const swept = await worker.worker.events.next("environmentSwept", (e) => e.environmentId === te.env.id);
      expect(swept).toMatchObject({ days: 30, deleted: { runs: 3 } });
      const { rows } = await te.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE id LIKE 'run_aged_%'`);
      expect(rows[0].n).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it("is off without the retention option", async () => {
    const worker = await startTestWorker(te, [], { timerLoop: false });
    try {
      expect(worker.worker.retention).toBeNull();
    } finally {
      await worker.stop();
    }
  });
});
