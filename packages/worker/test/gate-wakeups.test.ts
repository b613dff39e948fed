// When a run frees a gate pool (gates, migration 0049), the workers of the queues whose runs wait
// for that pool are woken at once (engine/runs/wake-gate-waiters.ts), not left to their next poll:
// two workers, one serving the gate queue (limit 1), one serving a queue whose runs are gated on
// it, polls an hour apart. Both ways: a run of the gate queue ends and a gated run waiting for its
// slot starts; a gated run ends and a run of the gate queue waiting for its slot starts (the
// second fails without wakeGateWaiters; the first was already served before it, by a path not
// traced here).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime/sdk";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const started = new Set<string>();
const finished = new Set<string>();
const releases = new Map<string, () => void>();

const run = async (p: { held?: boolean }, { ctx }: { ctx: { run: { id: string } } }) => {
  if (p.held) await new Promise<void>((resolve) => releases.set(ctx.run.id, resolve));
};
// The gate queue: one at a time. Its runs and the runs gated on it share that one slot.
const own = task({ id: "gw-own", queue: { name: "gw-emails", concurrencyLimit: 1 }, run });
// A queue with no limit of its own: only its gate holds its runs back.
const gated = task({ id: "gw-gated", queue: { name: "gw-gated" }, run });
const GATES = { gates: [{ queue: "gw-emails" }] };

async function startWorker(tasks: Parameters<typeof startTestWorker>[1]): Promise<TestWorker> {
  const w = await startTestWorker(te, tasks, { pollIntervalMs: 3_600_000 });
  w.worker.events.on("runStarted", (e) => started.add(e.runId));
  w.worker.events.on("runFinished", (e) => finished.add(e.runId));
  workers.push(w);
  return w;
}

/** Resolves after the worker's next full pass of claims. */
const nextPass = (w: TestWorker) => w.worker.events.next("claimsPassed", () => true, 10_000);

let ownWorker: TestWorker;
let gatedWorker: TestWorker;

beforeAll(async () => {
  te = await startTestEngine();
  ownWorker = await startWorker([own]);
  gatedWorker = await startWorker([gated]);
});
afterAll(async () => {
  for (const release of releases.values()) release();
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("a run that frees a gate pool", () => {
  it("of the gate queue: wakes the worker of the queue whose gated run waits for the slot", async () => {
    const holder = await triggerRun(te.engine, te.env, "gw-own", { held: true });
    await eventually(async () => releases.has(holder.id));
    const passed = nextPass(gatedWorker);
    const waiting = await triggerRun(te.engine, te.env, "gw-gated", {}, GATES);
    // The gated trigger told the workers; the gated queue's claim finds the pool full.
    await passed;
    expect((await getRunRow(te, waiting.id)).status).toBe("QUEUED");
    releases.get(holder.id)!();
    await eventually(async () => finished.has(holder.id), 5_000);
    // Woken by the holder's end, well before the hour's poll.
    await eventually(async () => finished.has(waiting.id), 5_000);
  });

  it("that was gated: wakes the worker of the gate queue whose own run waits for the slot", async () => {
    const holder = await triggerRun(te.engine, te.env, "gw-gated", { held: true }, GATES);
    await eventually(async () => releases.has(holder.id));
    const waiting = await triggerRun(te.engine, te.env, "gw-own", {});
    // Not offered (a limited queue); woken, the gate queue's claim finds its pool full.
    await eventually(async () => (await getRunRow(te, waiting.id)).status === "QUEUED" && !started.has(waiting.id));
    expect(started.has(waiting.id)).toBe(false);
    releases.get(holder.id)!();
    await eventually(async () => finished.has(holder.id), 5_000);
    await eventually(async () => finished.has(waiting.id), 5_000);
  });
});
