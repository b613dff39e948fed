// What a worker writes of itself into the registry (table `workers`, migration 0024) for the
// dashboard: its slots and start time when it enters, its slots in use and heartbeat time, by its
// injected clock, at each renewal; and what listLiveWorkers reads back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, listLiveWorkers, triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const T0 = new Date("2031-05-06T07:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const clock = new FakeClock(T0);
// Long enough that the lease timer (every leaseMs / 3 of real time) never renews during the test:
// each renewal here is one the test makes with checkExecutions().
const LEASE_MS = 600_000;
let te: TestEngine;
let tw: TestWorker;
const releases = new Map<string, () => void>();

const holds = task({
  id: "holds-a-slot",
  run: async (_: unknown, { ctx }) => new Promise<string>((resolve) => releases.set(ctx.run.id, () => resolve("released"))),
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [holds], { concurrency: 3, leaseMs: LEASE_MS, timerLoop: false, workerVersion: "20310506.1" });
});
afterAll(async () => {
  for (const release of releases.values()) release();
  await tw?.stop();
  await te?.close();
});

const live = () => listLiveWorkers(te.db.pool, te.env.id, clock.now());

describe("the worker's registry row", () => {
  it("says its slots, version, tasks and start time when the worker enters the registry", async () => {
    expect(await live()).toEqual([
      {
        id: tw.worker.id,
        tasks: ["holds-a-slot"],
        version: "20310506.1",
        slots: 3,
        slotsInUse: 0,
        startedAt: T0,
        lastHeartbeatAt: T0,
        aliveUntil: at(LEASE_MS),
      },
    ]);
  });

  it("records the slots in use and the heartbeat time at each renewal, keeping the start time", async () => {
    const started = tw.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "holds-a-slot", {});
    await started;
    clock.advance(5_000);
    await tw.worker.checkExecutions();
    expect(await live()).toMatchObject([{ slots: 3, slotsInUse: 1, startedAt: T0, lastHeartbeatAt: at(5_000), aliveUntil: at(5_000 + LEASE_MS) }]);

    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    // runStarted comes as the attempt begins; the task's code may not have reached its promise yet.
    await eventually(async () => releases.has(id));
    releases.get(id)!();
    await finished;
    await eventually(async () => tw.worker.slotsInUse() === 0);
    clock.advance(5_000);
    await tw.worker.checkExecutions();
    expect(await live()).toMatchObject([{ slotsInUse: 0, startedAt: T0, lastHeartbeatAt: at(10_000) }]);
  });

  it("enters again with its first start time after its row was removed", async () => {
    await te.db.pool.query(`DELETE FROM workers WHERE id = $1`, [tw.worker.id]);
    clock.advance(5_000);
    await tw.worker.checkExecutions();
    expect(await live()).toMatchObject([{ id: tw.worker.id, slots: 3, slotsInUse: 0, startedAt: T0, lastHeartbeatAt: at(15_000) }]);
  });

  it("is no longer live once its lease has passed without a renewal", async () => {
    const aliveUntil = at(15_000 + LEASE_MS);
    expect(await listLiveWorkers(te.db.pool, te.env.id, new Date(aliveUntil.getTime() - 1))).toHaveLength(1);
    expect(await listLiveWorkers(te.db.pool, te.env.id, aliveUntil)).toEqual([]);
  });
});
