// The limited claim's head (CLAIM_LIMITED_SQL, engine/runs/transitions/claim-ready.ts): when the
// first ready runs in queue order decide the claim, it reads only those (as many as the limit
// leaves) instead of ranking its window; it must pick exactly what ranking the window picks. The
// claims are called directly, two claimers racing where it matters; no worker runs here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_LIMITED_SQL, FakeClock, LIMITED_QUEUE_LOCK_SQL, triggerRun, triggerRuns } from "@svc/runtime/engine";
import { claimLimited, claimRateLimited, type Claimer } from "../src/execution/claim.ts";
import { startTestEngine, type TestEngine } from "./harness.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const clock = new FakeClock(T0);
let te: TestEngine;

function claimer(id: string, task: string): Claimer {
  return { id, version: "v1", environmentId: te.env.id, tasks: [task] };
}

/** Registers `task` in its own queue with limits, as a worker does. */
async function register(task: string, concurrencyLimit: number | null, rate: { limit: number; periodMs: number } | null = null) {
  await te.db.pool.query(
    `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version, rate_limit, rate_period_ms)
     VALUES ($1, $2, 'task/' || $2, $3, 'v1', $4, $5)`,
    [te.env.id, task, concurrencyLimit, rate?.limit ?? null, rate?.periodMs ?? null],
  );
}

async function executing(task: string): Promise<string[]> {
  const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE task_identifier = $1 AND status = 'EXECUTING' ORDER BY id`, [task]);
  return rows.map((r) => r.id);
}

async function finish(ids: string[]) {
  await te.db.pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = $2, claim_token = NULL WHERE id = ANY($1) AND status = 'EXECUTING'`, [ids, clock.now()]);
}

const claim = (who: string, task: string, limit: number) => claimLimited(te.engine.db, claimer(who, task), `task/${task}`, limit, clock.now(), 60_000);
const ids = (claims: { run: { id: string } }[]) => claims.map((c) => c.run.id);

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("a limited claim that reads only the head of its queue", () => {
  it("never executes more than the limit when claimers race over a deep backlog without keys", async () => {
    const LIMIT = 4;
    const RUNS = 300;
    await register("deep", LIMIT);
    await triggerRuns(te.engine, te.env, Array.from({ length: RUNS }, (_, i) => ({ taskIdentifier: "deep", payload: { i } })));
    let most = 0;
    let over: string[] | null = null;
    let done = 0;
    // Three claimers ask, in turn, for fewer, as many and more runs than the limit leaves, while the
    // runs they start end one by one, every third waiting first and then resuming: a due resume
    // keeps its old place in the queue, ahead of the runs a claim may be taking at that moment.
    const race = async (who: string, offset: number) => {
      for (let round = 0; done < RUNS; round++) {
        await claim(who, "deep", [1, 3, 8, LIMIT][(round + offset) % 4]!);
        const now = await executing("deep");
        most = Math.max(most, now.length);
        if (now.length > LIMIT) over ??= now;
      }
    };
    const waited = new Set<string>();
    const move = async () => {
      for (let round = 0; done < RUNS; round++) {
        await te.db.pool.query(
          `UPDATE runs SET resume_due_at = $1 WHERE id = (
             SELECT id FROM runs WHERE task_identifier = 'deep' AND status = 'WAITING' AND resume_due_at IS NULL ORDER BY created_at LIMIT 1)`,
          [clock.now()],
        );
        const [id] = await executing("deep");
        if (!id) continue;
        if (round % 3 === 0 && !waited.has(id)) {
          waited.add(id);
          await te.db.pool.query(`UPDATE runs SET status = 'WAITING', claim_token = NULL, worker_id = NULL, lease_expires_at = NULL WHERE id = $1 AND status = 'EXECUTING'`, [id]);
        } else {
          done += (await te.db.pool.query(`UPDATE runs SET status = 'COMPLETED', finished_at = $2, claim_token = NULL WHERE id = $1 AND status = 'EXECUTING'`, [id, clock.now()])).rowCount ?? 0;
        }
      }
    };
    await Promise.all([race("w-a", 0), race("w-b", 1), race("w-c", 2), move()]);
    expect(over).toBeNull();
    expect(most).toBe(LIMIT);
    expect(done).toBe(RUNS);
    expect(waited.size).toBeGreaterThan(50);
  });

  it("counts the queue's executions: with some executing, it starts only what the limit leaves", async () => {
    await register("counted", 5);
    await triggerRuns(te.engine, te.env, Array.from({ length: 50 }, (_, i) => ({ taskIdentifier: "counted", payload: { i } })));
    expect(await claim("w-a", "counted", 3)).toHaveLength(3);
    expect(await claim("w-b", "counted", 10)).toHaveLength(2);
    expect(await claim("w-a", "counted", 10)).toEqual([]);
    await finish((await executing("counted")).slice(0, 1));
    expect(await claim("w-b", "counted", 1)).toHaveLength(1);
    expect(await executing("counted")).toHaveLength(5);
  });

  it("still finds runs with a concurrency key behind runs without one that fill the limit", async () => {
    await register("mixed", 2);
    // A millisecond apart: queue order is created_at, then the id's drawn part.
    const trigger = async (options = {}) => {
      clock.advance(1);
      return (await triggerRun(te.engine, te.env, "mixed", {}, options)).id;
    };
    const plain: string[] = [];
    for (let i = 0; i < 5; i++) plain.push(await trigger());
    const a = [await trigger({ concurrencyKey: "a" }), await trigger({ concurrencyKey: "a" })];
    // Each key has its own copy of the limit: two without a key, then both of key a.
    expect(ids(await claim("w-a", "mixed", 10))).toEqual([...plain.slice(0, 2), ...a]);
    // Runs without a key are at their limit, so the head is empty; key b's run is found past them.
    const b = (await triggerRun(te.engine, te.env, "mixed", {}, { concurrencyKey: "b" })).id;
    expect(ids(await claim("w-b", "mixed", 1))).toEqual([b]);
    expect(await claim("w-a", "mixed", 10)).toEqual([]);
  });

  it("takes a due resume past a start its rate holds back, as ranking the window does", async () => {
    await register("paced", null, { limit: 1, periodMs: 60_000 });
    const first = (await triggerRun(te.engine, te.env, "paced", {})).id;
    clock.advance(1);
    const second = (await triggerRun(te.engine, te.env, "paced", {})).id;
    expect(ids((await claimRateLimited(te.engine.db, claimer("w-a", "paced"), "task/paced", 1, clock.now(), 60_000)).claims)).toEqual([first]);
    // The first run waits and is due again, after the second in queue order: the head (one run,
    // the second, over the rate) does not decide the claim.
    await te.db.pool.query(
      `UPDATE runs SET status = 'WAITING', resume_due_at = $2, claim_token = NULL, worker_id = NULL, created_at = created_at + interval '1 hour' WHERE id = $1`,
      [first, clock.now()],
    );
    const next = await claimRateLimited(te.engine.db, claimer("w-b", "paced"), "task/paced", 1, clock.now(), 60_000);
    expect(next.claims.map((c) => [c.run.id, c.previousStatus])).toEqual([[first, "WAITING"]]);
    expect(await executing("paced")).toEqual([first]);
  });

  it("picks exactly what ranking the window picks, over queues of every shape", async () => {
    // The claim with its head turned off, so that `ready` is always the ranked window.
    const head = "SELECT * FROM head WHERE (SELECT head FROM enough)";
    const gate = " AND NOT (SELECT head FROM enough)";
    expect(CLAIM_LIMITED_SQL.split(head)).toHaveLength(2);
    expect(CLAIM_LIMITED_SQL.split(gate)).toHaveLength(2);
    const windowOnly = CLAIM_LIMITED_SQL.replace(head, "SELECT * FROM head WHERE false").replace(gate, "");
    // Whether the head decides: the claim's CTEs up to `enough`.
    const enough = `WITH ${CLAIM_LIMITED_SQL.slice("WITH ".length, CLAIM_LIMITED_SQL.indexOf(",\n     ready AS ("))}
      SELECT e.head FROM enough e, (SELECT $5::text, $6::text, $8::float8) AS unused`;
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    /** What `sql` claims for `task`, rolled back. */
    const picks = async (sql: string, task: string, batch: number) => {
      const client = await te.db.pool.connect();
      try {
        await client.query("BEGIN");
        await client.query(LIMITED_QUEUE_LOCK_SQL, [te.env.id, `task/${task}`]);
        const { rows } = await client.query<{ id: string }>(sql, [te.env.id, `task/${task}`, [task], batch, "w-eq", "v1", clock.now(), 60_000, false, []]);
        return rows.map((r) => r.id).sort();
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    };
    let headDecided = 0;
    for (let n = 0; n < 100; n++) {
      const task = `shape-${n}`;
      const limit = 1 + random(5);
      await register(task, limit, random(3) === 0 ? { limit: 1 + random(4), periodMs: 60_000 } : null);
      const keys = random(3) === 0 ? ["a", "b"] : [];
      const rateKeys = random(3) === 0 ? ["x", "y"] : [];
      const runs = await triggerRuns(te.engine, te.env, Array.from({ length: random(25) }, (_, i) => {
        const key = keys.length && random(2) ? keys[random(2)] : undefined;
        const rateKey = rateKeys.length && random(2) ? rateKeys[random(2)] : undefined;
        return { taskIdentifier: task, payload: { i }, options: { ...(key ? { concurrencyKey: key } : {}), ...(rateKey ? { rateLimit: { key: rateKey } } : {}) } };
      }));
      // Some runs executing, some waiting with their resume due, each keeping its place in the queue.
      for (const run of runs) {
        const roll = random(5);
        if (roll === 0) await te.db.pool.query(`UPDATE runs SET status = 'EXECUTING', claim_token = 't', lease_expires_at = $2 WHERE id = $1`, [run.id, clock.now()]);
        if (roll === 1) await te.db.pool.query(`UPDATE runs SET status = 'WAITING', resume_due_at = $2, attempt_number = 1 WHERE id = $1`, [run.id, clock.now()]);
      }
      const batch = 1 + random(8);
      const withHead = await picks(CLAIM_LIMITED_SQL, task, batch);
      expect(await picks(windowOnly, task, batch), `${task}: limit ${limit}, batch ${batch}`).toEqual(withHead);
      const { rows } = await te.db.pool.query<{ head: boolean }>(enough, [te.env.id, `task/${task}`, [task], batch, "w-eq", "v1", clock.now(), 60_000, false, []]);
      if (rows[0]?.head) headDecided++;
    }
    // Most shapes are decided by the head, and some are not: both paths are compared.
    expect(headDecided).toBeGreaterThan(20);
    expect(headDecided).toBeLessThan(100);
  });
});
