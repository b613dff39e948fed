// A trigger's own rate (`rateLimit: { key?, limit, period }`, migration 0055) in the limited queue's
// claim: the run starts only while its key's starts in the last `period` number fewer than `limit`,
// and its queue's declared rate holds too. Each (queue, key, period) keeps its own log. The claim
// statements are called directly, with time given as the claim's `now`: nothing else claims.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock, queueOverview, triggerRun } from "@svc/runtime/engine";
import { claimRateLimited, claimReady, type Claimer } from "../src/execution/claim.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(T0);
let te: TestEngine;
const at = (ms: number) => new Date(T0.getTime() + ms);

function claimer(tasks: string[]): Claimer {
  return { id: "w-own-rate", version: "v1", environmentId: te.env.id, tasks };
}

async function register(task: string, rate: { limit: number; periodMs: number } | null) {
  await te.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, worker_version, rate_limit, rate_period_ms) VALUES ($1, $2, $3, 'v1', $4, $5)`,
    [te.env.id, task, `task/${task}`, rate?.limit ?? null, rate?.periodMs ?? null],
  );
}

type Own = { key?: string; limit?: number; period?: string | number };
/** A run, a millisecond after the one before (queue order is created_at: runs of one millisecond would be in id order, which is drawn). */
async function trigger(task: string, rateLimit?: Own): Promise<string> {
  clock.advance(1);
  return (await triggerRun(te.engine, te.env, task, {}, rateLimit ? { rateLimit } : {})).id;
}

async function claim(task: string, now: Date) {
  return claimRateLimited(te.engine.db, claimer([task]), `task/${task}`, 100, now, 60_000);
}

async function statuses(ids: string[]): Promise<string[]> {
  const { rows } = await te.db.pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE id = ANY($1)`, [ids]);
  const byId = new Map(rows.map((r) => [r.id, r.status]));
  return ids.map((id) => byId.get(id)!);
}

async function logs(task: string) {
  const { rows } = await te.db.pool.query(
    `SELECT rate_key, period_ms, started_n FROM rate_limit_windows WHERE environment_id = $1 AND queue_name = $2 ORDER BY rate_key, period_ms`,
    [te.env.id, `task/${task}`],
  );
  return rows;
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

describe("a trigger's own rate in the claim", () => {
  it("bounds its runs per key in a queue that declares no rate, which the plain claim never takes", async () => {
    await register("own", null);
    const a = [await trigger("own", { key: "a", limit: 2, period: "1m" }), await trigger("own", { key: "a", limit: 2, period: "1m" }), await trigger("own", { key: "a", limit: 2, period: "1m" })];
    const b = await trigger("own", { key: "b", limit: 2, period: "1m" });
    const plain = await trigger("own");
    // The plain claim leaves runs with their own rate to their queue's claim.
    expect((await claimReady(te.engine.db, claimer(["own"]), 100, at(0), 60_000)).map((c) => c.run.id)).toEqual([plain]);

    const first = await claim("own", at(0));
    expect(first.claims.map((c) => c.run.id).sort()).toEqual([a[0], a[1], b].sort());
    expect(first.rate).toEqual({ dueAt: at(60_000), waiting: 1, newlyDelayed: 1 });
    expect(await statuses(a)).toEqual(["EXECUTING", "EXECUTING", "QUEUED"]);
    expect(await logs("own")).toEqual([
      { rate_key: "a", period_ms: 60_000, started_n: [2] },
      { rate_key: "b", period_ms: 60_000, started_n: [1] },
    ]);
    // The queues page says its runs carry their own rate, and how many wait.
    const overview = (await queueOverview(te.engine.db, te.env.id, at(1))).find((q) => q.queue === "task/own");
    expect(overview).toMatchObject({ rateLimit: null, ownRates: { waiting: 1 } });

    // A millisecond short of the slot, nothing starts; at it, the third does.
    expect((await claim("own", at(59_999))).claims).toEqual([]);
    expect((await claim("own", at(60_000))).claims.map((c) => c.run.id)).toEqual([a[2]]);
  });

  it("holds a run to its own bound and to its queue's declared rate, both", async () => {
    await register("both", { limit: 3, periodMs: 60_000 });
    // Oldest first: own (1 a minute), plain, own, plain, all of key k.
    const ids = [
      await trigger("both", { key: "k", limit: 1, period: "1m" }),
      await trigger("both", { key: "k" }),
      await trigger("both", { key: "k", limit: 1, period: "1m" }),
      await trigger("both", { key: "k" }),
      await trigger("both", { key: "k" }),
    ];
    const first = await claim("both", at(0));
    // The first own run and the first plain one start; the second own run is over its own bound
    // (a start of its key this minute), the plain ones after it over the queue's 3 (ranked after it).
    expect(first.claims.map((c) => c.run.id)).toEqual([ids[0], ids[1]]);
    expect(await statuses(ids)).toEqual(["EXECUTING", "EXECUTING", "QUEUED", "QUEUED", "QUEUED"]);
    expect(first.rate).toMatchObject({ dueAt: at(60_000), waiting: 3 });
    // One log per period: the queue's minute and the runs' minute are one.
    expect(await logs("both")).toEqual([{ rate_key: "k", period_ms: 60_000, started_n: [2] }]);

    // A minute on: the own run (1 a minute) and two plain ones (the queue's 3).
    const second = await claim("both", at(60_000));
    expect(second.claims.map((c) => c.run.id)).toEqual([ids[2], ids[3], ids[4]]);
  });

  it("keeps a log per period, so a short bound frees at its own step and a long one counts every start", async () => {
    await register("mixed", null);
    const hourly = { key: "m", limit: 3, period: "1h" };
    const perSecond = { key: "m", limit: 2, period: "1s" };
    const first = [await trigger("mixed", hourly), await trigger("mixed", perSecond), await trigger("mixed", perSecond)];
    const one = await claim("mixed", at(0));
    // The hourly run and one per-second run start; the second per-second run ranks third of its key,
    // past its bound of 2 this second.
    expect(one.claims.map((c) => c.run.id)).toEqual([first[0], first[1]]);
    expect(await logs("mixed")).toEqual([
      { rate_key: "m", period_ms: 1_000, started_n: [2] },
      { rate_key: "m", period_ms: 3_600_000, started_n: [2] },
    ]);
    // Its slot is the second's, not the hour's step (36 s): 1 s later it starts.
    expect((await claim("mixed", at(999))).claims).toEqual([]);
    expect((await claim("mixed", at(1_000))).claims.map((c) => c.run.id)).toEqual([first[2]]);

    // Three starts of key m this hour: another hourly run waits for the first to leave the hour
    // (recorded at the hour log's step, 36 s: never early), while per-second runs go on.
    const later = [await trigger("mixed", hourly), await trigger("mixed", perSecond)];
    const three = await claim("mixed", at(5_000));
    expect(three.claims.map((c) => c.run.id)).toEqual([later[1]]);
    expect(three.rate).toMatchObject({ dueAt: at(3_600_000), waiting: 1 });
    expect((await claim("mixed", at(3_599_999))).claims).toEqual([]);
    // At the hour, the first two starts have left it (and the third, at 1 s, recorded at 36 s, too).
    expect((await claim("mixed", at(3_636_000))).claims.map((c) => c.run.id)).toEqual([later[0]]);
  });

  it("starts a new period's log from the key's longest, so a longer bound seen first counts the starts that log kept", async () => {
    await register("seeded", null);
    const tenMinutes = { key: "s", limit: 5, period: "10m" };
    const hourly = { key: "s", limit: 3, period: "1h" };
    // Two starts under a 10-minute bound; a minute later the first run bound to 3 an hour counts
    // them (read from the 10-minute log) and starts third.
    expect((await claim("seeded", at(0))).claims).toEqual([]);
    await trigger("seeded", tenMinutes);
    await trigger("seeded", tenMinutes);
    expect((await claim("seeded", at(0))).claims).toHaveLength(2);
    const h1 = await trigger("seeded", hourly);
    expect((await claim("seeded", at(60_000))).claims.map((c) => c.run.id)).toEqual([h1]);
    // Its new hour log holds those two starts as well as its own.
    const hourLog = (await logs("seeded")).find((l) => l.period_ms === 3_600_000);
    expect(hourLog?.started_n.reduce((x: number, y: number) => x + y, 0)).toBe(3);
    // Eleven minutes in, the 10-minute log has let them go; the hour log still counts three.
    const h2 = await trigger("seeded", hourly);
    const held = await claim("seeded", at(660_000));
    expect(held.claims).toEqual([]);
    expect(await statuses([h2])).toEqual(["QUEUED"]);
    expect(held.rate).toMatchObject({ dueAt: at(3_600_000), waiting: 1 });
  });
});
