// maxDuration: an attempt that runs too long is stopped and the run ends TIMED_OUT. The limit is
// the subject here, so these tests spend about one real second each (in parallel).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { triggerRun } from "@svc/runtime/engine";
import { step, task } from "@svc/runtime/sdk";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const observed = new Map<string, { aborted?: boolean; reason?: string; stepAfterAbortRan?: boolean; startedAt?: number }>();

/** Never resolves; remembers what it saw when its signal was aborted and tries to keep working. */
async function hangs(runId: string, signal: AbortSignal) {
  const seen: { aborted?: boolean; reason?: string; stepAfterAbortRan?: boolean; startedAt?: number } = { startedAt: Date.now() };
  observed.set(runId, seen);
  try {
    await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  } catch (error) {
    seen.aborted = signal.aborted;
    seen.reason = (error as Error).message;
    void step.run("after-timeout", () => (seen.stepAfterAbortRan = true));
  }
  await new Promise(() => {});
}

const limited = task({ id: "limited-duration", maxDuration: 1, run: (_p: unknown, { ctx, signal }) => hangs(ctx.run.id, signal) });
const unlimited = task({ id: "unlimited-duration", run: (_p: unknown, { ctx, signal }) => hangs(ctx.run.id, signal) });

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [limited, unlimited]);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("maxDuration", () => {
  it("stops a task with maxDuration 1 that never resolves: TIMED_OUT, signal aborted, nothing recorded after", async () => {
    const { id } = await triggerRun(te.engine, te.env, "limited-duration", {});
    const finished = await tw.worker.events.next("runFinished", (e) => e.runId === id, 10_000);
    expect(finished.status).toBe("TIMED_OUT");
    const seen = observed.get(id)!;
    expect(Date.now() - seen.startedAt!).toBeGreaterThanOrEqual(950);
    expect(seen.aborted).toBe(true);
    expect(seen.reason).toMatch(/maxDuration of 1s exceeded/);
    expect(seen.stepAfterAbortRan).toBeUndefined();

    const run = await getRunRow(te, id);
    expect(run.status).toBe("TIMED_OUT");
    expect(run.attempt_number).toBe(1);
    expect(run.error).toMatchObject({ code: "MAX_DURATION_EXCEEDED", message: "Run exceeded its maxDuration of 1s" });
    expect(run.finished_at).not.toBeNull();
    const ledger = await te.db.pool.query(`SELECT step_key FROM run_ledger WHERE run_id = $1`, [id]);
    expect(ledger.rows).toEqual([]);
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [id]);
    expect(attempts.rows).toEqual([{ number: 1, status: "TIMED_OUT" }]);
  });

  it("applies a maxDuration given at trigger time to a task that declares none", async () => {
    const { id } = await triggerRun(te.engine, te.env, "unlimited-duration", {}, { maxDuration: 1 });
    expect((await tw.worker.events.next("runFinished", (e) => e.runId === id, 10_000)).status).toBe("TIMED_OUT");
    expect(observed.get(id)!.aborted).toBe(true);
    expect((await getRunRow(te, id)).error).toMatchObject({ code: "MAX_DURATION_EXCEEDED" });
  });
});
