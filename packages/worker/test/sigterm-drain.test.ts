// SIGTERM on a real worker process: it stops claiming, lets in-flight runs finish, exits 0.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { eventually, getRunRow, startTestEngine, type TestEngine } from "./harness.ts";
import { CRASH_FIXTURE, spawnWorker, type WorkerProcess } from "./processes.ts";

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

function startWorker() {
  const w = spawnWorker(te.db.url, te.project.environments.dev.secretKey, CRASH_FIXTURE);
  workers.push(w);
  return w;
}

async function marks(runId: string) {
  const { rows } = await te.db.pool.query<{ what: string; pid: number }>(`SELECT what, pid FROM test_marks WHERE run_id = $1 ORDER BY at`, [runId]);
  return rows;
}

/** Sends SIGTERM and resolves once the worker logged that it is draining (the signal was handled). */
async function terminate(w: WorkerProcess) {
  w.child.kill("SIGTERM");
  await eventually(async () => w.output().includes("draining in-flight runs"), 10_000);
}

describe("SIGTERM", () => {
  it("lets the run in flight complete, claims nothing new after the signal, and exits 0", async () => {
    const w = startWorker();
    await w.ready;
    const inFlight = await triggerRun(te.engine, te.env, "slow", { holdMs: 1500 });
    await eventually(async () => (await marks(inFlight.id)).some((m) => m.what === "start:1"));
    await terminate(w);
    const late = await triggerRun(te.engine, te.env, "slow", { holdMs: 0 });

    expect(await w.exited).toBe(0);
    const done = await getRunRow(te, inFlight.id);
    expect(done.status).toBe("COMPLETED");
    expect(JSON.parse(done.output!).json).toEqual({ attempt: 1, pid: w.child.pid });
    // The run triggered after the signal was left for another worker.
    const untouched = await getRunRow(te, late.id);
    expect(untouched.status).toBe("QUEUED");
    expect(untouched.attempt_number).toBe(0);
    expect(await marks(late.id)).toEqual([]);
    expect(w.output()).toContain("worker stopped");

    // Another worker picks the queued run up.
    const next = startWorker();
    await next.ready;
    await eventually(async () => (await getRunRow(te, late.id)).status === "COMPLETED");
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  }, 60_000);

  it("does not resume a waiting run on the draining worker: the run stays WAITING for the next worker", async () => {
    const w = startWorker();
    await w.ready;
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
    const waiting = await triggerRun(te.engine, te.env, "wait-then-work", { tokenId, holdAfterMs: 0 });
    await eventually(async () => (await getRunRow(te, waiting.id)).status === "WAITING");
    const inFlight = await triggerRun(te.engine, te.env, "slow", { holdMs: 1500 });
    await eventually(async () => (await marks(inFlight.id)).some((m) => m.what === "start:1"));
    await terminate(w);
    // The resume NOTIFY reaches the draining worker, which still listens but must not take it.
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { n: 5 }));

    expect(await w.exited).toBe(0);
    expect((await getRunRow(te, inFlight.id)).status).toBe("COMPLETED");
    expect((await marks(waiting.id)).map((m) => m.what)).toEqual(["before"]);
    expect((await getRunRow(te, waiting.id)).status).toBe("WAITING");

    const next = startWorker();
    await next.ready;
    const resumed = await eventually(async () => {
      const r = await getRunRow(te, waiting.id);
      return r.status === "COMPLETED" ? r : null;
    });
    expect(JSON.parse(resumed.output!).json).toMatchObject({ n: 5, attempt: 1, pid: next.child.pid });
    expect((await marks(waiting.id)).map((m) => m.what)).toEqual(["before", "after:1"]);
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  }, 60_000);
});
