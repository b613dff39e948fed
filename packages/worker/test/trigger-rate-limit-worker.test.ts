// A worker serving a task that declares no rate, whose runs carry their own (a trigger's
// `rateLimit: { key, limit, period }`): the trigger tells the environment's workers (queuesChanged),
// the worker claims that queue with its rate-limited claim, and starts the runs over the rate when
// the injected clock reaches their slot, woken by its own timer (its poll is an hour: nothing else
// wakes it).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, triggerRuns } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { eventually, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(T0);
let te: TestEngine;
let tw: TestWorker;

const notify = task({ id: "notify-customer", run: async () => "sent" });
const late = task({ id: "late-report", run: async () => "done" });

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [notify], { timerLoop: false, timers: clock, pollIntervalMs: 3_600_000 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

/** The runs `ids`, in that order. */
async function runsOf(ids: string[]) {
  const { rows } = await te.db.pool.query<{ id: string; status: string; started_at: Date | null }>(`SELECT id, status, started_at FROM runs WHERE id = ANY($1)`, [ids]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
}

describe("a worker whose runs carry their own rate", () => {
  it("learns of the queue from the trigger, holds the runs over their rate, and starts each at its slot", async () => {
    const held = tw.worker.events.next("rateLimited", (e) => e.queue === "task/notify-customer" && e.waiting === 2);
    const triggered = await triggerRuns(te.engine, te.env, [
      ...Array.from({ length: 4 }, (_, i) => ({ taskIdentifier: "notify-customer", payload: { i }, options: { rateLimit: { key: "gold", limit: 2, period: "1m" } } })),
      { taskIdentifier: "notify-customer", payload: { i: 4 }, options: { rateLimit: { key: "free", limit: 1, period: "1h" } } },
    ]);
    const ids = triggered.map((r) => r.id);
    expect((await held).dueAt).toEqual(new Date(T0.getTime() + 60_000));
    // Two of key gold (its runs share one created_at: which two is the id's draw) and the one of key free.
    const gold = ids.slice(0, 4);
    const free = ids[4]!;
    await eventually(async () => (await runsOf(ids)).filter((r) => r.status === "COMPLETED").length === 3);
    expect((await runsOf(gold)).map((r) => r.status).sort()).toEqual(["COMPLETED", "COMPLETED", "QUEUED", "QUEUED"]);
    expect((await runsOf([free]))[0]!.status).toBe("COMPLETED");

    // The worker's timer, at the slot, claims the other two of key gold.
    clock.advance(60_000);
    await eventually(async () => (await runsOf(ids)).every((r) => r.status === "COMPLETED"));
    const startedAt = (await runsOf(gold)).map((r) => r.started_at!.getTime() - T0.getTime()).sort((x, y) => x - y);
    expect(startedAt).toEqual([0, 0, 60_000, 60_000]);
  });
});

describe("a worker that starts after runs with their own rate were queued", () => {
  it("leaves them to its rate-limited claim: its start moves only runs of queues that changed side", async () => {
    // No worker has the task yet: the runs wait, each its queue's limited claim's (claim_from_runs false).
    const triggered = await triggerRuns(
      te.engine,
      te.env,
      Array.from({ length: 3 }, (_, i) => ({ taskIdentifier: "late-report", payload: { i }, options: { rateLimit: { key: "k", limit: 1, period: "1h" } } })),
    );
    const ids = triggered.map((r) => r.id);
    const late2 = await startTestWorker(te, [late], { timerLoop: false, timers: clock, pollIntervalMs: 3_600_000 });
    try {
      // Moved to the plain claim, the three would be taken by one claim statement: none still QUEUED.
      await eventually(async () => (await runsOf(ids)).some((r) => r.status === "COMPLETED"));
      expect((await runsOf(ids)).map((r) => r.status).sort()).toEqual(["COMPLETED", "QUEUED", "QUEUED"]);
      const { rows } = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND claim_from_runs`, [ids]);
      expect(rows[0]!.n).toBe(0);
    } finally {
      await late2.stop();
    }
  });
});
