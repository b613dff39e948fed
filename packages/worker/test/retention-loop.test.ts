// The worker's retention loop: configured from RUN_RETENTION_*, it sweeps on a loop of its own
// and tells what it deleted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RETENTION_PACE, type PaceTimer } from "@svc/runtime/engine";
import { parseWorkerConfig } from "../src/config.ts";
import { tokenCreator } from "../src/execution/create-token.ts";
import { createWorker, type WorkerOptions } from "../src/worker.ts";
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

  it("sweeps at the default pace unless RUN_RETENTION_BATCH_SIZE and RUN_RETENTION_REST_RATIO say otherwise", () => {
    expect(parseWorkerConfig(base)).toMatchObject({ RUN_RETENTION_BATCH_SIZE: DEFAULT_RETENTION_PACE.batchSize, RUN_RETENTION_REST_RATIO: DEFAULT_RETENTION_PACE.restRatio });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_BATCH_SIZE: "", RUN_RETENTION_REST_RATIO: "" })).toMatchObject({ RUN_RETENTION_BATCH_SIZE: 1000, RUN_RETENTION_REST_RATIO: DEFAULT_RETENTION_PACE.restRatio });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_BATCH_SIZE: "250", RUN_RETENTION_REST_RATIO: "9" })).toMatchObject({ RUN_RETENTION_BATCH_SIZE: 250, RUN_RETENTION_REST_RATIO: 9 });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_REST_RATIO: "0.5" })).toMatchObject({ RUN_RETENTION_REST_RATIO: 0.5 });
    expect(parseWorkerConfig({ ...base, RUN_RETENTION_REST_RATIO: "0" })).toMatchObject({ RUN_RETENTION_REST_RATIO: 0 });
  });

  it("refuses a bad pace at startup, naming the setting", () => {
    for (const bad of ["0", "9", "10001", "12.5", "lots"]) {
      expect(() => parseWorkerConfig({ ...base, RUN_RETENTION_BATCH_SIZE: bad }), bad).toThrow(/invalid worker configuration.*:\n {2}RUN_RETENTION_BATCH_SIZE: /);
    }
    for (const bad of ["-1", "1001", "slow", "Infinity"]) {
      expect(() => parseWorkerConfig({ ...base, RUN_RETENTION_REST_RATIO: bad }), bad).toThrow(/invalid worker configuration.*:\n {2}RUN_RETENTION_REST_RATIO: /);
    }
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

describe("the retention loop's pace", () => {
  it("is the one the worker is given", async () => {
    await te.db.pool.query(
      `INSERT INTO runs (id, environment_id, project_id, task_identifier, status, queue_name, created_at, updated_at, finished_at)
       SELECT 'run_pace_' || i, e.id, e.project_id, 'aged', 'COMPLETED', 'task/aged', now() - interval '40 days' + i * interval '1 ms',
              now() - interval '40 days', now() - interval '40 days'
       FROM environments e, generate_series(1, 25) i WHERE e.id = $1`,
      [te.env.id],
    );
    // Due now, whether or not another test swept it already.
    await te.db.pool.query(`UPDATE retention_sweeps SET due_at = '-infinity' WHERE environment_id = $1`, [te.env.id]);
    // Each batch takes 10 ms on this timer; the rests are recorded, not waited out.
    let ms = 0;
    let readings = 0;
    const rests: number[] = [];
    const paceTimer: PaceTimer = {
      elapsedMs: () => (++readings % 2 === 0 ? (ms += 10) : ms),
      rest: async (restMs) => void rests.push(restMs),
    };
    const worker = await startTestWorker(te, [], { timerLoop: false, retention: { defaultDays: 30, intervalMs: 600_000, batchSize: 10, restRatio: 7, paceTimer } });
    try {
      const counts = await worker.worker.retention!.tick();
      expect(counts["run-retention"]).toBe(25);
      // Three batches of runs (10, 10, 5), then one of each other kind of row, each followed by its rest.
      expect(rests.length).toBeGreaterThanOrEqual(3);
      expect(rests.every((r) => r === 70)).toBe(true);
    } finally {
      await worker.stop();
    }
  });

  it("refuses a bad pace when the worker is made, before it starts", () => {
    const made = (retention: WorkerOptions["retention"]) => () =>
      createWorker({
        engine: te.engine, databaseUrl: te.db.url, environment: te.env, tasks: [],
        workerVersion: "test-1", concurrency: 1, createToken: tokenCreator(te.engine), retention,
      });
    expect(made({ defaultDays: 30, intervalMs: 600_000, restRatio: -2 })).toThrow(/rest ratio must be a number from 0 \(no rest\) to 1000, not -2/);
    expect(made({ defaultDays: 30, intervalMs: 600_000, batchSize: 100_000 })).toThrow(/batch size must be a whole number from 10 to 10000 rows, not 100000/);
  });
});
