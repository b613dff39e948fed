// The retention sweep's pace (RUN_RETENTION_BATCH_SIZE, RUN_RETENTION_REST_RATIO): batches of
// the size asked for, each followed by a rest in proportion to its time, on a pace timer the test
// drives (no wall-clock sleeps).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, fireAllDue, runRetention, type PaceTimer } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { countRuns, DAY, insertFinishedRuns } from "./retention-fixtures.ts";

let te: TestEngine;
const T0 = new Date("2026-05-01T00:00:00Z");
const clock = new FakeClock(T0);
const t = (days: number) => new Date(T0.getTime() + days * DAY);

beforeAll(async () => {
  te = await startTestEngine({ clock });
  // Only this environment is swept, so every batch below is one of its own.
  await te.db.pool.query(`INSERT INTO retention_sweeps (environment_id, due_at) SELECT id, 'infinity' FROM environments WHERE id <> $1`, [te.env.id]);
});
afterAll(async () => te?.close());

/**
 * A pace timer on which the n-th batch takes `batchMs(n)` ms: readings come in pairs around each
 * batch. Each rest is recorded with the runs of `prefix` left when it began, and `onRest` may act.
 */
function scriptedTimer(prefix: string, batchMs: (n: number) => number, onRest?: (n: number) => void) {
  let ms = 0;
  let readings = 0;
  const rests: { ms: number; runsLeft: number }[] = [];
  const timer: PaceTimer = {
    elapsedMs() {
      readings += 1;
      if (readings % 2 === 0) ms += batchMs(readings / 2);
      return ms;
    },
    async rest(restMs) {
      rests.push({ ms: restMs, runsLeft: await countRuns(te.db.pool, prefix) });
      ms += restMs;
      onRest?.(rests.length);
    },
  };
  return { timer, rests };
}

describe("the retention sweep's pace", () => {
  it("deletes batchSize runs per statement and rests restRatio times each batch's time after it", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 35, t(0), "paced");
    clock.set(t(31));
    const { timer, rests } = scriptedTimer("paced", () => 20);
    const work = runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 10, restRatio: 3, paceTimer: timer });
    const counts = await fireAllDue(te.engine, clock.now(), [work]);
    expect(counts["run-retention"]).toBe(35);
    // Four batches of runs, ten at a time; then one batch of each other kind of row, each rested after too.
    expect(rests.slice(0, 4).map((r) => r.runsLeft)).toEqual([25, 15, 5, 0]);
    expect(rests.length).toBeGreaterThan(4);
    expect(rests.every((r) => r.ms === 60)).toBe(true);
  });

  it("rests longer after a slower batch, as a busy database makes them", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 30, t(40), "slower");
    clock.set(t(71));
    const { timer, rests } = scriptedTimer("slower", (n) => (n === 2 ? 250 : 20));
    await fireAllDue(te.engine, clock.now(), [runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 10, restRatio: 2, paceTimer: timer })]);
    expect(rests.slice(0, 3)).toEqual([{ ms: 40, runsLeft: 20 }, { ms: 500, runsLeft: 10 }, { ms: 40, runsLeft: 0 }]);
  });

  it("does not rest with a ratio of 0", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 25, t(80), "unrested");
    clock.set(t(111));
    const { timer, rests } = scriptedTimer("unrested", () => 20);
    const counts = await fireAllDue(te.engine, clock.now(), [runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 10, restRatio: 0, paceTimer: timer })]);
    expect(counts["run-retention"]).toBe(25);
    expect(rests).toEqual([]);
  });

  it("ends the sweep after a rest in which the loop was stopped, and it is due again at once", async () => {
    await insertFinishedRuns(te.db.pool, te.env.id, 50, t(120), "stopped");
    clock.set(t(151));
    const stop = new AbortController();
    const { timer, rests } = scriptedTimer("stopped", () => 20, (n) => n === 2 && stop.abort());
    const work = runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 10, restRatio: 1, paceTimer: timer });
    await fireAllDue(te.engine, clock.now(), [work], { signal: stop.signal });
    expect(rests.map((r) => r.runsLeft)).toEqual([40, 30]);
    expect(await countRuns(te.db.pool, "stopped")).toBe(30);
    expect((await work.nextDue(te.db.pool))!.getTime()).toBeLessThanOrEqual(clock.now().getTime());
  });

  it("refuses a bad pace when the work is made, before any sweep", () => {
    expect(() => runRetention({ defaultDays: 30, intervalMs: 600_000, batchSize: 5 })).toThrow(/batch size must be a whole number from 10 to 10000 rows, not 5/);
    expect(() => runRetention({ defaultDays: 30, intervalMs: 600_000, restRatio: -1 })).toThrow(/rest ratio must be a number from 0 \(no rest\) to 1000, not -1/);
  });
});
