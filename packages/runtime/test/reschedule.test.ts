// A DELAYED run's reschedule and its firing meet on the run's row: whichever takes the row first
// wins, and the other sees it (reschedule.ts says what it relies on in what fires delayed runs).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayedRuns, FakeClock, fireAllDue, rescheduleRun, triggerRun, withTransaction } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { fireDelayed } from "../src/engine/runs/transitions/fire-delayed.ts";

let te: TestEngine;
const t0 = new Date("2026-11-22T10:00:00Z");
const clock = new FakeClock(t0);
const at = (ms: number) => new Date(t0.getTime() + ms);

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** Polls until one backend of this database waits for a lock another holds (the reschedule, on the run's row). */
async function untilOneBackendIsBlocked(): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
    );
    if (rows[0]!.n === 1) return;
    if (Date.now() > deadline) throw new Error("the reschedule never waited for the firing's row lock");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function status(id: string): Promise<{ status: string; delay_until: Date | null }> {
  const { rows } = await te.db.pool.query(`SELECT status, delay_until FROM runs WHERE id = $1`, [id]);
  return rows[0];
}

describe("rescheduleRun against the firing of delayed runs", () => {
  it("waits for a firing that holds the run, then refuses: the run is no longer DELAYED", async () => {
    clock.set(t0);
    const { id } = await triggerRun(te.engine, te.env, "later", {}, { delay: "1m" });
    let reschedule: Promise<unknown> | undefined;
    await withTransaction(te.db.pool, async (tx) => {
      expect((await fireDelayed(tx, at(60_000), 10)).map((r) => r.id)).toContain(id);
      // The firing holds the row until it commits: the reschedule waits for it.
      reschedule = rescheduleRun(te.engine, te.env.id, id, "1h").then(
        () => "rescheduled",
        (error: Error) => error.message,
      );
      await untilOneBackendIsBlocked();
    });
    expect(await reschedule).toBe(`Cannot reschedule a run that is not delayed: ${id} is QUEUED`);
    expect(await status(id)).toEqual({ status: "QUEUED", delay_until: null });
  });

  it("once it committed, a firing at the old time finds nothing due; the run fires at its new time", async () => {
    clock.set(t0);
    const { id } = await triggerRun(te.engine, te.env, "later", {}, { delay: "1m" });
    await rescheduleRun(te.engine, te.env.id, id, "10m");
    expect(await status(id)).toEqual({ status: "DELAYED", delay_until: at(600_000) });
    expect((await fireAllDue(te.engine, at(60_000), [delayedRuns]))["delayed-runs"]).toBe(0);
    expect((await status(id)).status).toBe("DELAYED");
    await fireAllDue(te.engine, at(600_000), [delayedRuns]);
    expect((await status(id)).status).toBe("QUEUED");
  });
});
