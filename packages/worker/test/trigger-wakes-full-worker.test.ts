// A run triggered while every slot of its workers is taken is not offered: it waits in `runs`. The
// trigger's own INSERT wakes the workers of its queue (insert-runs.ts, wake-workers.ts), with no
// second statement and no dispatcher: here the triggering engine's dispatcher wakes nobody, and the
// worker's poll is an hour, so only that wake-up tells the full worker to claim the run once a
// slot frees.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { noDispatch, type ConnectedEngine } from "@svc/runtime/testing";
import { task } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const release: (() => void)[] = [];
const hold = task({ id: "hold-slot", run: async () => new Promise<void>((resolve) => release.push(resolve)) });

let te: TestEngine;
let quiet: ConnectedEngine;
let tw: TestWorker;
beforeAll(async () => {
  te = await startTestEngine();
  quiet = await te.connect({ poolMax: 2, dispatcher: noDispatch });
  tw = await startTestWorker(te, [hold], { concurrency: 1, timerLoop: false, pollIntervalMs: 3_600_000 });
});
afterAll(async () => {
  for (const r of release) r();
  await tw?.stop();
  await quiet?.close();
  await te?.close();
});

describe("a trigger while its worker is full", () => {
  it("wakes the worker from its INSERT, which claims the run as soon as its slot frees", async () => {
    const first = await triggerRun(quiet.engine, te.env, "hold-slot", {});
    await eventually(async () => release.length === 1);
    expect((await getRunRow(te, first.id)).status).toBe("EXECUTING");
    // The worker's row says it is full once its slot is taken: the next run is not offered.
    await eventually(async () => (await te.db.pool.query(`SELECT full_since FROM workers WHERE id = $1`, [tw.worker.id])).rows[0]?.full_since != null);

    const woken = tw.worker.events.next("claimsPassed", (e) => e.full);
    const second = await triggerRun(quiet.engine, te.env, "hold-slot", {});
    expect(second.run.status).toBe("QUEUED");
    await woken; // the wake-up reached the full worker: it notes the backlog

    release.shift()!();
    await eventually(async () => release.length === 1);
    expect((await getRunRow(te, second.id)).status).toBe("EXECUTING");
    release.shift()!();
    await eventually(async () => (await getRunRow(te, second.id)).status === "COMPLETED");
  });
});
