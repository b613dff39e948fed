import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { eventually, getRunRow, startTestEngine, type TestEngine } from "./harness.ts";
import { CRASH_FIXTURE, spawnWorker, type WorkerProcess } from "./processes.ts";

// Real worker processes, killed with SIGKILL: nothing runs after the kill, so recovery must come
// from lease lapse: every execution holds a lease on its run.
let te: TestEngine;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  te = await startTestEngine();
  await te.db.pool.query(`CREATE TABLE test_marks (run_id text, what text, pid int, at timestamptz DEFAULT now())`);
});
afterAll(async () => {
  for (const w of workers) w.child.kill("SIGKILL");
  await Promise.all(workers.map((w) => w.exited));
  await te?.close();
});

function startWorker(env: Record<string, string> = {}) {
  const w = spawnWorker(te.db.url, te.project.environments.dev.secretKey, CRASH_FIXTURE, env);
  workers.push(w);
  return w;
}

async function marks(runId: string) {
  const { rows } = await te.db.pool.query<{ what: string; pid: number }>(`SELECT what, pid FROM test_marks WHERE run_id = $1 ORDER BY at`, [runId]);
  return rows;
}

describe("kill -9 of a worker", () => {
  it("mid-run: the run is picked up again by another worker with attempt + 1 and completes", async () => {
    const a = startWorker();
    await a.ready;
    const { id } = await triggerRun(te.engine, te.env, "slow", { holdMs: 60_000 });
    await eventually(async () => (await marks(id)).some((m) => m.what === "start:1"));
    const started = Date.now();
    a.child.kill("SIGKILL");
    await a.exited;
    await te.db.pool.query(`UPDATE runs SET payload = '{"holdMs":50}' WHERE id = $1`, [id]);
    const b = startWorker();
    await b.ready;
    const run = await eventually(async () => {
      const r = await getRunRow(te, id);
      return r.status === "COMPLETED" ? r : null;
    }, 40_000);
    const recoveredInMs = Date.now() - started;
    expect(run.attempt_number).toBe(2);
    expect(JSON.parse(run.output!).json.pid).toBe(b.child.pid);
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1 ORDER BY number`, [id]);
    expect(attempts.rows).toEqual([
      { number: 1, status: "CRASHED" },
      { number: 2, status: "COMPLETED" },
    ]);
    expect(recoveredInMs).toBeLessThan(30_000);
    b.child.kill("SIGKILL");
    await b.exited;
  }, 60_000);

  it("while runs wait, and in the middle of the replay after resuming: nothing is lost", async () => {
    const a = startWorker({ WORKER_LEASE_MS: "3000" });
    await a.ready;
    const tokens = await Promise.all([0, 1, 2].map(async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id));
    const runs = await Promise.all(tokens.map((tokenId) => triggerRun(te.engine, te.env, "wait-then-work", { tokenId, holdAfterMs: 60_000 })));
    await eventually(async () => {
      const { rows } = await te.db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'WAITING'`, [runs.map((r) => r.id)]);
      return rows[0].n === 3;
    });
    // The worker dies while the runs wait: they hold no worker resources, so nothing to recover yet.
    a.child.kill("SIGKILL");
    await a.exited;
    const b = startWorker({ WORKER_LEASE_MS: "3000" });
    await b.ready;
    // Resume one run and kill b in the middle of its replay (after the wait, before it returns).
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokens[0]!, { n: 0 }));
    await eventually(async () => (await marks(runs[0]!.id)).some((m) => m.what === "after:1"));
    b.child.kill("SIGKILL");
    await b.exited;
    await te.db.pool.query(`UPDATE runs SET payload = jsonb_set(payload::jsonb, '{holdAfterMs}', '0')::text WHERE id = ANY($1)`, [runs.map((r) => r.id)]);
    const c = startWorker({ WORKER_LEASE_MS: "3000" });
    await c.ready;
    await withTransaction(te.db.pool, async (tx) => {
      await completeToken(te.engine, tx, tokens[1]!, { n: 1 });
      await completeToken(te.engine, tx, tokens[2]!, { n: 2 });
    });
    for (const [i, run] of runs.entries()) {
      const row = await eventually(async () => {
        const r = await getRunRow(te, run.id);
        return r.status === "COMPLETED" ? r : null;
      }, 40_000);
      expect(JSON.parse(row.output!).json.n).toBe(i);
      // The step before the wait ran exactly once, whatever died when.
      expect((await marks(run.id)).filter((m) => m.what === "before")).toHaveLength(1);
    }
    // The run killed mid-replay continued on worker c as a new attempt, from its ledger.
    const killed = await getRunRow(te, runs[0]!.id);
    expect(killed.attempt_number).toBe(2);
    expect(JSON.parse(killed.output!).json.pid).toBe(c.child.pid);
    c.child.kill("SIGKILL");
    await c.exited;
  }, 90_000);
});
