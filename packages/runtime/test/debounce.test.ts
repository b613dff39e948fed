// Debounced triggers under concurrency: triggers of one key serialize on the key's lock, and a
// push meets the firing of the run on its row (debounce.ts says what it relies on).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, needsTransaction, triggerRun, triggerRunInTransaction, withTransaction } from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";
import { fireDelayed } from "../src/engine/runs/transitions/fire-delayed.ts";

let te: TestEngine;
const t0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(t0);

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** Polls until one backend of this database waits for a lock another holds. */
async function untilOneBackendIsBlocked(): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
    );
    if (rows[0]!.n === 1) return;
    if (Date.now() > deadline) throw new Error("no trigger waited for the other's lock");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function runIds(task: string): Promise<string[]> {
  const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE environment_id = $1 AND task_identifier = $2 ORDER BY id`, [te.env.id, task]);
  return rows.map((r) => r.id);
}

describe("debounced triggers", () => {
  it("take the transaction path; plain triggers stay one statement", () => {
    expect(needsTransaction([{ taskIdentifier: "t", payload: {}, options: { debounce: { key: "k", delay: "5s" } } }])).toBe(true);
    expect(needsTransaction([{ taskIdentifier: "t", payload: {}, options: { delay: "5s" } }])).toBe(false);
  });

  it("a second trigger of a key waits for the first's transaction, then finds its run", async () => {
    clock.set(t0);
    const debounce = { key: "serial", delay: "10s" };
    let second: Promise<string> | undefined;
    const first = await withTransaction(te.db.pool, async (tx) => {
      const created = await triggerRunInTransaction(te.engine, tx, te.env, "deb-serial", { n: 1 }, { debounce });
      second = triggerRun(te.engine, te.env, "deb-serial", { n: 2 }, { debounce }).then((r) => r.id);
      await untilOneBackendIsBlocked();
      return created;
    });
    expect(await second).toBe(first.id);
    expect(await runIds("deb-serial")).toEqual([first.id]);
  });

  it("many triggers of a key at once, each in its own transaction, make one run", async () => {
    clock.set(t0);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => triggerRun(te.engine, te.env, "deb-many", { i }, { debounce: { key: "k", delay: "30s" } })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.isCached)).toHaveLength(1);
    expect(await runIds("deb-many")).toEqual([results[0]!.id]);
  });

  it("a trigger that meets the firing of its run waits for it, then creates a new run", async () => {
    clock.set(t0);
    const debounce = { key: "firing", delay: "2s" };
    const { id } = await triggerRun(te.engine, te.env, "deb-fire", {}, { debounce });
    let next: Promise<string> | undefined;
    await withTransaction(te.db.pool, async (tx) => {
      expect((await fireDelayed(tx, new Date(t0.getTime() + 2000), 10)).map((r) => r.id)).toContain(id);
      next = triggerRun(te.engine, te.env, "deb-fire", {}, { debounce }).then((r) => r.id);
      await untilOneBackendIsBlocked();
    });
    const created = await next!;
    expect(created).not.toBe(id);
    const { rows } = await te.db.pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE id = ANY($1) ORDER BY id`, [[id, created]]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [id]: "QUEUED", [created]: "DELAYED" });
  });
});
