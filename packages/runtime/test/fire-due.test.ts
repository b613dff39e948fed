// The timer pass fires every kind of due work: one that fails does not hold back the others.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayedRuns, FakeClock, fireAllDue, triggerRun, type DueWork } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

let te: TestEngine;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

describe("fireAllDue", () => {
  it("fires the work after one that fails, then reports the failure", async () => {
    const { id } = await triggerRun(te.engine, te.env, "later", {}, { delay: "1m" });
    clock.advance(60_000);
    const broken: DueWork = {
      name: "broken",
      fire: async (deps) => (await deps.db.query(`SELECT * FROM no_such_table`)).rowCount ?? 0,
      nextDue: async () => null,
    };
    const pass = fireAllDue(te.engine, clock.now(), [broken, delayedRuns]);
    await expect(pass).rejects.toThrow(/broken: relation "no_such_table" does not exist/);
    const { rows } = await te.db.pool.query(`SELECT status FROM runs WHERE id = $1`, [id]);
    expect(rows[0].status).toBe("QUEUED");
  });
});
