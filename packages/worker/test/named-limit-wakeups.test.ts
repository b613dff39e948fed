// When a run holding a named concurrency limit stops executing, the workers of the other queues
// whose runs wait for that limit are woken at once (engine/concurrency-limits/wake-limit-waiters.ts),
// not left to their next poll: two workers, each serving one task on its own queue, both tasks
// holding a limit of total 1, polls an hour apart. The second task's run, refused while the
// first's executes, starts as soon as that one ends, which without the wake-up would take the
// poll's hour.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { concurrencyLimit, task } from "@svc/runtime/sdk";
import { registerTasks } from "../src/tasks/register-tasks.ts";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
const workers: TestWorker[] = [];
const started = new Set<string>();
const finished = new Set<string>();

/** Releases the run holding the limit (its code waits for it). */
let release: () => void = () => {};
const gate = () => new Promise<void>((resolve) => (release = resolve));

const one = concurrencyLimit({ name: "wk-one", total: 1 });
const first = task({ id: "wk-first", queue: { name: "wk-first" }, concurrency: one, run: async (p: { wait?: boolean }) => (p.wait ? gate() : undefined) });
const secondTask = task({ id: "wk-second", queue: { name: "wk-second" }, concurrency: one, run: async () => "ok" });

async function startWorker(tasks: Parameters<typeof startTestWorker>[1]): Promise<TestWorker> {
  const w = await startTestWorker(te, tasks, { pollIntervalMs: 3_600_000 });
  w.worker.events.on("runStarted", (e) => started.add(e.runId));
  w.worker.events.on("runFinished", (e) => finished.add(e.runId));
  workers.push(w);
  return w;
}

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  release();
  for (const w of workers) await w.stop();
  await te?.close();
});

describe("a run that frees a named limit's slot", () => {
  it("wakes the worker of another queue whose run waits for that limit", async () => {
    await startWorker([first]);
    // The second task registered (as by a worker of it that stopped since): its runs hold the limit.
    await registerTasks(te.db.pool, te.env.id, [secondTask], "test-1", te.engine.clock.now());
    const holder = await triggerRun(te.engine, te.env, "wk-first", { wait: true });
    await eventually(async () => started.has(holder.id));
    const waiting = await triggerRun(te.engine, te.env, "wk-second", {});
    // The second task's worker starts now: its first pass of claims comes after the run was
    // queued, finds the limit full and leaves the run QUEUED; nothing else wakes it for an hour.
    const second = await startWorker([secondTask]);
    let passes = 0;
    second.worker.events.on("claimsPassed", () => passes++);
    await eventually(async () => passes >= 1);
    expect((await getRunRow(te, waiting.id)).status).toBe("QUEUED");

    release();
    await eventually(async () => finished.has(holder.id), 5_000);
    // Woken by the holder's end, well before the hour's poll.
    await eventually(async () => finished.has(waiting.id), 5_000);
    expect((await getRunRow(te, waiting.id)).status).toBe("COMPLETED");
  });
});
