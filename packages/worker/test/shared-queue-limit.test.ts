// Tasks that name the same queue share it, and its concurrencyLimit. A task declared after the one
// that sets the limit, naming the queue without one, must not lift the limit for the whole queue.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker | undefined;
const releases = new Map<string, () => void>();

const limitedOne = task({
  id: "shared-queue-limited",
  queue: { name: "shared-q", concurrencyLimit: 1 },
  run: async (_: unknown, { ctx }) => new Promise<void>((resolve) => releases.set(ctx.run.id, resolve)),
});
const sibling = task({
  id: "shared-queue-sibling",
  queue: { name: "shared-q" },
  run: async () => "sibling",
});

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  for (const release of releases.values()) release();
  await tw?.stop();
  await te?.close();
});

describe("a queue two tasks share", () => {
  it("keeps the concurrencyLimit one of them declares, whatever order the tasks are loaded in", async () => {
    // Both runs are queued before the worker starts: its first fetch sees both jobs.
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await triggerRun(te.engine, te.env, "shared-queue-limited", {}, { queue: { name: "shared-q" } })).id);
    const finished = new Set<string>();
    tw = await startTestWorker(te, [limitedOne, sibling]);
    tw.worker.events.on("runFinished", (e) => finished.add(e.runId));
    await eventually(async () => releases.size >= 1);
    // The first fetch has been claimed and started: had it taken both jobs, both would run now.
    const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'EXECUTING'`, [ids]);
    expect(rows[0]!.n).toBe(1);
    expect(releases.size).toBe(1);

    const [first] = [...releases.keys()];
    releases.get(first!)!();
    await eventually(async () => releases.size === 2);
    for (const [id, release] of releases) if (id !== first) release();
    await eventually(async () => ids.every((id) => finished.has(id)));
  });
});
