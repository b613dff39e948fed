// Rate limits in the limited queue's claim (migration 0047, engine/runs/rate-limit-sql.ts): at most
// `limit` starts in any window of `period`, per rate key; a run over the rate stays QUEUED until its
// slot and is never started early. The claim statements are called directly, with time given
// as the claim's `now`: no worker runs here, so nothing else claims.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, queueOverview, triggerRun } from "@svc/runtime/engine";
import { claimRateLimited, claimReady, type Claimer } from "../src/execution/claim.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(T0);
let te: TestEngine;
const at = (ms: number) => new Date(T0.getTime() + ms);

function claimer(tasks: string[]): Claimer {
  return { id: "w-rate", version: "v1", environmentId: te.env.id, tasks };
}

/** Registers `task` in queue `queue` with a rate limit (and a concurrency limit), as a worker does. */
async function register(task: string, queue: string, rate: { limit: number; periodMs: number } | null, concurrencyLimit: number | null = null) {
  await te.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version, rate_limit, rate_period_ms)
     VALUES ($1, $2, $3, $4, 'v1', $5, $6)`,
    [te.env.id, task, queue, concurrencyLimit, rate?.limit ?? null, rate?.periodMs ?? null],
  );
}

/** Runs a millisecond apart: queue order is created_at, and runs of one millisecond would be in id order, which is drawn. */
async function trigger(task: string, count: number, key?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    clock.advance(1);
    ids.push((await triggerRun(te.engine, te.env, task, { i }, key === undefined ? {} : { rateLimit: { key } })).id);
  }
  return ids;
}

async function statuses(ids: string[]): Promise<string[]> {
  const { rows } = await te.db.pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE id = ANY($1)`, [ids]);
  const byId = new Map(rows.map((r) => [r.id, r.status]));
  return ids.map((id) => byId.get(id)!);
}

async function claim(task: string, queue: string, now: Date, limit = 100) {
  return claimRateLimited(te.engine.db, claimer([task]), queue, limit, now, 60_000);
}

async function finish(ids: string[]) {
  await te.db.pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = $2, claim_token = NULL WHERE id = ANY($1) AND status = 'EXECUTING'`, [ids, clock.now()]);
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("a rate-limited queue's claim", () => {
  it("starts at most `limit` runs in a window, leaves the rest QUEUED, and says when the next slot is due", async () => {
    await register("fixed", "task/fixed", { limit: 3, periodMs: 10_000 });
    const ids = await trigger("fixed", 5);
    expect(await statuses(ids)).toEqual(["QUEUED", "QUEUED", "QUEUED", "QUEUED", "QUEUED"]);

    const first = await claim("fixed", "task/fixed", at(0));
    expect(first.claims.map((c) => c.run.id)).toEqual(ids.slice(0, 3));
    expect(first.rate).toEqual({ dueAt: at(10_000), waiting: 2, newlyDelayed: 2 });
    expect(await statuses(ids)).toEqual(["EXECUTING", "EXECUTING", "EXECUTING", "QUEUED", "QUEUED"]);
    // The queues page shows the rate and the runs waiting for it.
    const overview = (await queueOverview(te.engine.db, te.env.id, at(1))).find((q) => q.queue === "task/fixed");
    expect(overview?.rateLimit).toEqual({ limit: 3, periodMs: 10_000, waiting: 2 });

    // Finishing runs frees no rate: only time does. A millisecond before the slot, nothing starts.
    await finish(ids.slice(0, 3));
    const early = await claim("fixed", "task/fixed", at(9_999));
    expect(early.claims).toEqual([]);
    // Held back again, but counted once (rate_delayed_at: svc_runs_rate_delayed_total).
    expect(early.rate).toEqual({ dueAt: at(10_000), waiting: 2, newlyDelayed: 0 });
    const { rows: marked } = await te.db.pool.query(`SELECT id, rate_delayed_at FROM runs WHERE id = ANY($1) AND rate_delayed_at IS NOT NULL ORDER BY created_at, id`, [ids]);
    expect(marked).toEqual([{ id: ids[3], rate_delayed_at: at(0) }, { id: ids[4], rate_delayed_at: at(0) }]);
    expect(await statuses(ids.slice(3))).toEqual(["QUEUED", "QUEUED"]);

    const due = await claim("fixed", "task/fixed", at(10_000));
    expect(due.claims.map((c) => c.run.id)).toEqual(ids.slice(3));
    expect(due.rate).toEqual({ dueAt: null, waiting: 0, newlyDelayed: 0 });
    expect((await queueOverview(te.engine.db, te.env.id, at(10_001))).find((q) => q.queue === "task/fixed")?.rateLimit).toEqual({ limit: 3, periodMs: 10_000, waiting: 0 });
    const { rows } = await te.db.pool.query(`SELECT started_at FROM runs WHERE id = ANY($1) ORDER BY started_at`, [ids]);
    expect(rows.map((r) => r.started_at)).toEqual([at(0), at(0), at(0), at(10_000), at(10_000)]);
  });

  it("counts a sliding window, not fixed ones: a start frees its slot one period after it was made", async () => {
    await register("sliding", "task/sliding", { limit: 2, periodMs: 10_000 });
    const ids = await trigger("sliding", 1);
    expect((await claim("sliding", "task/sliding", at(0))).claims).toHaveLength(1);
    ids.push(...(await trigger("sliding", 4)));
    expect((await claim("sliding", "task/sliding", at(5_000))).claims.map((c) => c.run.id)).toEqual([ids[1]]);
    const blocked = await claim("sliding", "task/sliding", at(9_000));
    expect(blocked.claims).toEqual([]);
    expect(blocked.rate).toMatchObject({ dueAt: at(10_000), waiting: 3 });
    // The start at 0 leaves the window at 10 s; the one at 5 s is still in it.
    const next = await claim("sliding", "task/sliding", at(10_000));
    expect(next.claims.map((c) => c.run.id)).toEqual([ids[2]]);
    expect(next.rate).toMatchObject({ dueAt: at(15_000), waiting: 2 });
    expect((await claim("sliding", "task/sliding", at(14_999))).claims).toEqual([]);
    expect((await claim("sliding", "task/sliding", at(15_000))).claims.map((c) => c.run.id)).toEqual([ids[3]]);
    // The log keeps only the starts of the last period.
    const { rows } = await te.db.pool.query(`SELECT started_at, started_n FROM rate_limit_windows WHERE environment_id = $1 AND queue_name = 'task/sliding'`, [te.env.id]);
    expect(rows).toEqual([{ started_at: [at(10_000), at(15_000)], started_n: [1, 1] }]);
  });

  it("keeps time in steps of 1/100 of the period, rounding a start up: its slot frees up to a step late, never early", async () => {
    await register("stepped", "task/stepped", { limit: 3, periodMs: 10_000 });
    const ids = await trigger("stepped", 4);
    // Three claims within one step (100 ms) of a 10 s period: one log entry, of 3 starts.
    expect((await claim("stepped", "task/stepped", at(1), 1)).claims).toHaveLength(1);
    expect((await claim("stepped", "task/stepped", at(50), 1)).claims).toHaveLength(1);
    expect((await claim("stepped", "task/stepped", at(99), 1)).claims).toHaveLength(1);
    const { rows } = await te.db.pool.query(`SELECT started_at, started_n FROM rate_limit_windows WHERE environment_id = $1 AND queue_name = 'task/stepped'`, [te.env.id]);
    expect(rows).toEqual([{ started_at: [at(100)], started_n: [3] }]);
    const held = await claim("stepped", "task/stepped", at(10_001));
    expect(held.claims).toEqual([]);
    expect(held.rate).toMatchObject({ dueAt: at(10_100), waiting: 1 });
    expect((await claim("stepped", "task/stepped", at(10_100))).claims.map((c) => c.run.id)).toEqual([ids[3]]);
  });

  it("gives each rate key its own copy of the limit, and runs without a key one more", async () => {
    await register("keyed", "task/keyed", { limit: 2, periodMs: 60_000 });
    const a = await trigger("keyed", 3, "customer-a");
    const b = await trigger("keyed", 3, "customer-b");
    const none = await trigger("keyed", 3);
    const first = await claim("keyed", "task/keyed", at(0));
    expect(new Set(first.claims.map((c) => c.run.id))).toEqual(new Set([...a.slice(0, 2), ...b.slice(0, 2), ...none.slice(0, 2)]));
    expect(first.rate).toEqual({ dueAt: at(60_000), waiting: 3, newlyDelayed: 3 });
    // Another key triggered later starts at once: the others' limits are not its own.
    const c = await trigger("keyed", 1, "customer-c");
    expect((await claim("keyed", "task/keyed", at(1_000))).claims.map((x) => x.run.id)).toEqual(c);
    const { rows } = await te.db.pool.query(`SELECT rate_key FROM rate_limit_windows WHERE environment_id = $1 AND queue_name = 'task/keyed' ORDER BY 1`, [te.env.id]);
    expect(rows.map((r) => r.rate_key)).toEqual(["", "customer-a", "customer-b", "customer-c"]);
  });

  it("holds with a concurrencyLimit too: each limit takes what it allows", async () => {
    await register("both", "task/both", { limit: 5, periodMs: 1_000 }, 2);
    const ids = await trigger("both", 6);
    expect((await claim("both", "task/both", at(0))).claims.map((c) => c.run.id)).toEqual(ids.slice(0, 2));
    await finish(ids.slice(0, 2));
    expect((await claim("both", "task/both", at(10))).claims.map((c) => c.run.id)).toEqual(ids.slice(2, 4));
    await finish(ids.slice(2, 4));
    // 4 started in this second, the limit is 5: one more, then the rate, not the concurrency, holds.
    const third = await claim("both", "task/both", at(20));
    expect(third.claims.map((c) => c.run.id)).toEqual([ids[4]]);
    expect(third.rate).toMatchObject({ dueAt: at(1_000), waiting: 1 });
  });

  it("counts only starts: a due resume of the queue is claimed whatever the rate", async () => {
    await register("resumer", "task/resumer", { limit: 1, periodMs: 60_000 });
    const [first, second] = await trigger("resumer", 2);
    expect((await claim("resumer", "task/resumer", at(0))).claims.map((c) => c.run.id)).toEqual([first]);
    await te.db.pool.query(`UPDATE runs SET status = 'WAITING', resume_due_at = $2, claim_token = NULL, worker_id = NULL WHERE id = $1`, [first, at(100)]);
    const next = await claim("resumer", "task/resumer", at(200));
    expect(next.claims.map((c) => [c.run.id, c.previousStatus])).toEqual([[first, "WAITING"]]);
    expect(await statuses([second!])).toEqual(["QUEUED"]);
  });

  it("leaves queues without a rate limit as they were: no log, and the plain claim takes their runs", async () => {
    await register("limited-only", "task/limited-only", null, 10);
    const limited = await trigger("limited-only", 3);
    expect((await claim("limited-only", "task/limited-only", at(0))).claims).toHaveLength(3);
    const plain = await trigger("plain", 20);
    const { rows: flags } = await te.db.pool.query(`SELECT bool_and(claim_from_runs) AS plain FROM runs WHERE id = ANY($1)`, [plain]);
    expect(flags[0].plain).toBe(true);
    expect(await claimReady(te.engine.db, claimer(["plain"]), 100, at(0), 60_000)).toHaveLength(20);
    const { rows } = await te.db.pool.query(`SELECT count(*)::int AS n FROM rate_limit_windows WHERE queue_name IN ('task/limited-only', 'task/plain')`);
    expect(rows[0].n).toBe(0);
    expect(limited).toHaveLength(3);
    const overview = await queueOverview(te.engine.db, te.env.id, at(0));
    expect(overview.find((q) => q.queue === "task/limited-only")?.rateLimit).toBeNull();
  });

  it("makes a rate-limited queue's runs limited: never offered at trigger, never taken by the plain claim", async () => {
    await register("rated-plain", "task/rated-plain", { limit: 100, periodMs: 1_000 });
    const ids = await trigger("rated-plain", 2);
    const { rows } = await te.db.pool.query(`SELECT bool_or(claim_from_runs) AS plain FROM runs WHERE id = ANY($1)`, [ids]);
    expect(rows[0].plain).toBe(false);
    expect(await claimReady(te.engine.db, claimer(["rated-plain"]), 100, at(0), 60_000)).toEqual([]);
  });
});
