// worker_versions (migration 0033): every claim that gives runs a worker version keeps that
// version's seen_until past the claim's time, so that the run list's version filter may start its
// walk there. Checked for each way a run gets its version: a start claim, an offer made by a
// completion, the fast path, a limited queue's claim (claimLimited), with time driven by an injected clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, listRuns, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { claimLimited } from "../src/execution/claim.ts";
import { eventually, hideFromOffers, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const T0 = new Date("2026-11-25T10:00:00Z");
const VERSION = "20261125.7";
const clock = new FakeClock(T0);
let te: TestEngine;
let tw: TestWorker;

const quick = task({ id: "quick", run: async () => "done" });
const waiter = task({ id: "waiter", run: async (payload: { tokenId: string }) => (await wait.forToken(payload.tokenId), "resumed") });

async function seenUntil(version = VERSION): Promise<Date | null> {
  const { rows } = await te.db.pool.query<{ seen_until: Date }>(`SELECT seen_until FROM worker_versions WHERE environment_id = $1 AND version = $2`, [te.env.id, version]);
  return rows[0]?.seen_until ?? null;
}
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

async function runToEnd(taskId: string, payload: unknown) {
  const run = await triggerRun(te.engine, te.env, taskId, payload);
  await eventually(async () => (await te.db.pool.query(`SELECT 1 FROM runs WHERE id = $1 AND status = 'COMPLETED'`, [run.id])).rowCount === 1);
  return run.id;
}

async function suspended(tokenId: string): Promise<string> {
  const run = await triggerRun(te.engine, te.env, "waiter", { tokenId });
  await tw.worker.events.next("runSuspended", (e) => e.runId === run.id);
  return run.id;
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [quick, waiter], { timerLoop: false, workerVersion: VERSION });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("worker_versions.seen_until", () => {
  it("is entered when the worker starts, a minute past its clock", async () => {
    expect(await seenUntil()).toEqual(at(1));
  });

  it("is not written by a claim while it is more than half a minute ahead", async () => {
    const { rows: before } = await te.db.pool.query(`SELECT xmin FROM worker_versions WHERE version = $1`, [VERSION]);
    await runToEnd("quick", {});
    const { rows: after } = await te.db.pool.query(`SELECT xmin FROM worker_versions WHERE version = $1`, [VERSION]);
    expect(after).toEqual(before);
    expect(await seenUntil()).toEqual(at(1));
  });

  it("moves past a start claim's time", async () => {
    clock.set(at(10));
    await runToEnd("quick", {});
    expect(await seenUntil()).toEqual(at(11));
  });

  it("moves past the time of a completion that offers the run to a worker of the version", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id;
    const id = await suspended(tokenId);
    clock.set(at(20));
    // Live by the new time (the registry entry renews by the clock), so that the completion offers.
    await tw.worker.checkExecutions();
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
    expect((await resumed).via).toBe("offer");
    await done;
    expect(await seenUntil()).toEqual(at(21));
  });

  it("moves past a fast-path claim's time", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1d" })).waitpoint.id;
    const id = await suspended(tokenId);
    await hideFromOffers(te, tw);
    clock.set(at(30));
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
    expect((await resumed).via).toBe("fast-path");
    await done;
    expect(await seenUntil()).toEqual(at(31));
  });

  it("moves past a limited queue's claim (claimLimited), in the run's environment only", async () => {
    const other = "20261125.8";
    await te.db.pool.query(`INSERT INTO worker_versions (environment_id, version, seen_until) VALUES ($1, $2, $3), ($4, $2, $3)`, [te.env.id, other, at(0), te.project.environments.prod.id]);
    await te.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, concurrency_limit, worker_version) VALUES ($1, 'limited-elsewhere', 'task/limited-elsewhere', 1, $2)`,
      [te.env.id, other],
    );
    const run = await triggerRun(te.engine, te.env, "limited-elsewhere", {});
    const claims = await claimLimited(te.engine.db, { id: "w-other", version: other, environmentId: te.env.id, tasks: ["limited-elsewhere"] }, "task/limited-elsewhere", 1, at(40), 15_000);
    expect(claims.map((c) => c.run.id)).toEqual([run.id]);
    expect(await seenUntil(other)).toEqual(at(41));
    const { rows } = await te.db.pool.query(`SELECT seen_until FROM worker_versions WHERE environment_id = $1 AND version = $2`, [te.project.environments.prod.id, other]);
    expect(rows[0]!.seen_until).toEqual(at(0));
  });

  it("lets the run list find every run of the version", async () => {
    const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE worker_version = $1 ORDER BY created_at DESC, id DESC`, [VERSION]);
    expect(rows.length).toBe(4);
    const page = await listRuns(te.engine.db, [te.env.id], { versions: [VERSION, "no-such-version"] }, { keyset: null, direction: "desc", limit: 10 });
    expect(page.map((r) => r.id)).toEqual(rows.map((r) => r.id));
    expect(await listRuns(te.engine.db, [te.env.id], { versions: ["no-such-version"] }, { keyset: null, direction: "desc", limit: 10 })).toEqual([]);
  });

  it("enters the version of a build that does not know worker_versions, unbounded, when it registers its tasks", async () => {
    // What an older build does at start: register its tasks with its version (worker_tasks).
    await te.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version, registered_at) VALUES ($1, 'quick', 'task/quick', 'STANDARD', 'older-build', $2)
       ON CONFLICT (environment_id, task_identifier) DO UPDATE SET worker_version = EXCLUDED.worker_version`,
      [te.env.id, at(50)],
    );
    const { rows } = await te.db.pool.query(`SELECT seen_until = 'infinity' AS unbounded FROM worker_versions WHERE environment_id = $1 AND version = 'older-build'`, [te.env.id]);
    expect(rows).toEqual([{ unbounded: true }]);
    const run = await triggerRun(te.engine, te.env, "nobody-serves-this", {});
    await te.db.pool.query(`UPDATE runs SET worker_version = 'older-build' WHERE id = $1`, [run.id]);
    const page = await listRuns(te.engine.db, [te.env.id], { versions: ["older-build"] }, { keyset: null, direction: "desc", limit: 10 });
    expect(page.map((r) => r.id)).toEqual([run.id]);
    // This worker's own version, entered before its tasks, kept its time.
    expect(await seenUntil()).toEqual(at(31));
  });
});
