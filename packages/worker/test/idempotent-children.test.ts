// triggerAndWait with an idempotency key another run already holds: the parent gets that run
// (Trigger.dev's semantics) and must be resumed by it, even when it has already finished.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task, tasks } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

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
const parent = task({
  id: "idem-parent",
  run: async (payload: { key: string }) => {
    const result = await tasks.triggerAndWait<{ doubled: number }>("idem-child", { n: 21 }, { idempotencyKey: payload.key });
    return result.unwrap();
  },
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [child, parent]);
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

