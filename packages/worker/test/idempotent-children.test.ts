// triggerAndWait with an idempotency key another run already holds: the parent gets that run
// (Trigger.dev's semantics) and must be resumed by it, even when it has already finished.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task, tasks } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
let childCalls = 0;
const finished = new Map<string, string>();

const child = task({
  id: "idem-child",
  run: async (payload: { n: number }) => {
    childCalls++;
    return { doubled: payload.n * 2 };
  },
});
const gates = new Map<string, () => void>();
const gatedChild = task({
  id: "idem-gated-child",
  run: async (payload: { n: number }, { ctx }) => {
    await new Promise<void>((resolve) => gates.set(ctx.run.id, resolve));
    return { tripled: payload.n * 3 };
  },
});
const gatedParent = task({
  id: "idem-gated-parent",
  run: async (payload: { key: string }) => {
    const result = await tasks.triggerAndWait<{ tripled: number }>("idem-gated-child", { n: 0 }, { idempotencyKey: payload.key });
    return result.unwrap();
  },
});
const batchParent = task({
  id: "idem-batch-parent",
  run: async (payload: { items: { key?: string; n: number }[]; taskId?: string }) => {
    const results = await tasks.batchTriggerAndWait<unknown>(
      payload.taskId ?? "idem-child",
      payload.items.map((item) => ({ payload: { n: item.n }, options: item.key ? { idempotencyKey: item.key } : {} })),
    );
    return results.runs.map((r) => (r.ok ? r.output : { failed: r.error }));
  },
});
const parent = task({
  id: "idem-parent",
  run: async (payload: { key: string }) => {
    const result = await tasks.triggerAndWait<{ doubled: number }>("idem-child", { n: 21 }, { idempotencyKey: payload.key });
    return result.unwrap();
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [child, parent, gatedChild, gatedParent, batchParent]);
  tw.worker.events.on("runFinished", (e) => finished.set(e.runId, e.status));
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function finish(id: string) {
  const status = finished.get(id) ?? (await tw.worker.events.next("runFinished", (e) => e.runId === id, 15_000)).status;
  return { status, output: JSON.parse((await getRunRow(te, id)).output ?? "null")?.json };
}

describe("a child idempotency key held by a finished run", () => {
  it("resumes triggerAndWait at once with that run's output", async () => {
    const first = await triggerRun(te.engine, te.env, "idem-parent", { key: "child-key" });
    expect(await finish(first.id)).toEqual({ status: "COMPLETED", output: { doubled: 42 } });
    const second = await triggerRun(te.engine, te.env, "idem-parent", { key: "child-key" });
    expect(await finish(second.id)).toEqual({ status: "COMPLETED", output: { doubled: 42 } });
    expect(childCalls).toBe(1);
  });
});


describe("a child idempotency key held by a run that is still executing", () => {
  it("resumes triggerAndWait when that run ends, although it was triggered without a waiter", async () => {
    // Triggered plainly (nobody waits), and executing when the parent attaches to it.
    const running = await triggerRun(te.engine, te.env, "idem-gated-child", { n: 7 }, { idempotencyKey: "live-key" });
    await eventually(async () => gates.has(running.id));
    const parentRun = await triggerRun(te.engine, te.env, "idem-gated-parent", { key: "live-key" });
    await tw.worker.events.next("runSuspended", (e) => e.runId === parentRun.id);
    expect((await getRunRow(te, running.id)).awaited).toBe(true);
    gates.get(running.id)!();
    expect(await finish(running.id)).toEqual({ status: "COMPLETED", output: { tripled: 21 } });
    expect(await finish(parentRun.id)).toEqual({ status: "COMPLETED", output: { tripled: 21 } });
  });
});

describe("batchTriggerAndWait items answered by an idempotency key", () => {
  it("count a run that has already finished, in item order", async () => {
    const done = await triggerRun(te.engine, te.env, "idem-child", { n: 5 }, { idempotencyKey: "batch-done-key" });
    expect(await finish(done.id)).toMatchObject({ status: "COMPLETED" });
    const p = await triggerRun(te.engine, te.env, "idem-batch-parent", { items: [{ n: 1 }, { key: "batch-done-key", n: 99 }, { n: 3 }] });
    expect(await finish(p.id)).toEqual({ status: "COMPLETED", output: [{ doubled: 2 }, { doubled: 10 }, { doubled: 6 }] });
  });

  it("count one run that answers two items of the same batch", async () => {
    const p = await triggerRun(te.engine, te.env, "idem-batch-parent", { items: [{ key: "twice-key", n: 4 }, { key: "twice-key", n: 4 }] });
    expect(await finish(p.id)).toEqual({ status: "COMPLETED", output: [{ doubled: 8 }, { doubled: 8 }] });
  });

  it("wait for a run triggered without a waiter that is still executing", async () => {
    const running = await triggerRun(te.engine, te.env, "idem-gated-child", { n: 2 }, { idempotencyKey: "batch-live-key" });
    await eventually(async () => gates.has(running.id));
    const p = await triggerRun(te.engine, te.env, "idem-batch-parent", { taskId: "idem-gated-child", items: [{ key: "batch-live-key", n: 0 }] });
    await tw.worker.events.next("runSuspended", (e) => e.runId === p.id);
    gates.get(running.id)!();
    expect(await finish(p.id)).toEqual({ status: "COMPLETED", output: [{ tripled: 6 }] });
  });
});
