// What a worker's start reads to move runs between the plain claim and a limited queue's claim
// (engine/runs/changed-queue-runs.ts, migration 0057): a plain queue's runs on the limited side
// (none unless it lost its limit, or a trigger raced the change) at every start; a limited queue's
// live runs only when `queues.runs_limited` says they were last moved elsewhere, or never.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runsToMoveSql, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task } from "@svc/runtime";
import { startTestEngine, startTestWorker, type TestEngine } from "./harness.ts";

let te: TestEngine;
beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  await te?.close();
});

const limited = task({ id: "side-limited", queue: { name: "side-q", concurrencyLimit: 1 }, run: async () => "ok" });
const plain = task({ id: "side-plain", queue: { name: "side-q" }, run: async () => "ok" });

async function sideOf(runId: string): Promise<boolean> {
  const { rows } = await te.db.pool.query<{ claim_from_runs: boolean }>(`SELECT claim_from_runs FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.claim_from_runs;
}
async function recorded(): Promise<boolean | null> {
  const { rows } = await te.db.pool.query<{ runs_limited: boolean | null }>(`SELECT runs_limited FROM queues WHERE environment_id = $1 AND name = 'side-q'`, [te.env.id]);
  return rows[0]?.runs_limited ?? null;
}
/** A worker of `tasks` started and stopped: its start is what moves runs. */
async function startAndStop(tasks: Parameters<typeof startTestWorker>[1]) {
  const w = await startTestWorker(te, tasks, { timerLoop: false });
  await w.stop();
}

describe("a worker's start", () => {
  it("records the side it moved a queue's runs to, and reads a limited queue's runs again only when that changed", async () => {
    // Delayed an hour: nobody claims it while the workers come and go.
    const run = await triggerRun(te.engine, te.env, "side-limited", {}, { delay: "1h", queue: { name: "side-q" } });
    expect(await sideOf(run.id)).toBe(true); // no worker yet: the queue has no limit
    await startAndStop([limited]);
    expect(await sideOf(run.id)).toBe(false);
    expect(await recorded()).toBe(true);

    // A run on the plain side of the queue the record calls limited (a trigger that raced the
    // registration leaves one): counted outside the limit once, the next start leaves it.
    await te.db.pool.query(`UPDATE runs SET claim_from_runs = true WHERE id = $1`, [run.id]);
    await startAndStop([limited]);
    expect(await sideOf(run.id)).toBe(true);

    // The queue loses its limit (a worker registers the task without it): its runs move to the
    // plain side, read from the index of limited-side live runs, and the record follows.
    await te.db.pool.query(`UPDATE runs SET claim_from_runs = false WHERE id = $1`, [run.id]);
    await startAndStop([{ ...limited, queue: { name: "side-q" } }, plain]);
    expect(await sideOf(run.id)).toBe(true);
    expect(await recorded()).toBe(false);

    // And gets it back: the record says plain, so the limited queue's live runs are read again.
    await startAndStop([limited]);
    expect(await sideOf(run.id)).toBe(false);
    expect(await recorded()).toBe(true);
  });

  it("forgets the record when a registration or an operator may have changed the queue's side, whichever build wrote it", async () => {
    await startAndStop([limited]);
    expect(await recorded()).toBe(true);
    // As any build's registration writes it: the same task again changes nothing.
    const reregister = (limit: number | null) =>
      te.db.pool.query(`UPDATE worker_tasks SET concurrency_limit = $2, registered_at = now() WHERE environment_id = $1 AND task_identifier = 'side-limited'`, [te.env.id, limit]);
    await reregister(1);
    expect(await recorded()).toBe(true);
    await reregister(null);
    expect(await recorded()).toBe(null);
    await startAndStop([limited]);
    expect(await recorded()).toBe(true);
    // An operator's pause, written by any build's API.
    await te.db.pool.query(`UPDATE queues SET paused = true WHERE environment_id = $1 AND name = 'side-q'`, [te.env.id]);
    expect(await recorded()).toBe(null);
    await te.db.pool.query(`UPDATE queues SET paused = false WHERE environment_id = $1 AND name = 'side-q'`, [te.env.id]);
    // A task registered in this queue for the first time.
    await startAndStop([limited]);
    await te.db.pool.query(
      `INSERT INTO worker_tasks (environment_id, task_identifier, queue_name, kind, worker_version, registered_at) VALUES ($1, 'side-newcomer', 'side-q', 'STANDARD', 'test-1', now())`,
      [te.env.id],
    );
    expect(await recorded()).toBe(null);
  });

  it("finds a plain queue's runs on the limited side through their index, not the environment's live runs", async () => {
    // The table is tiny here: with sequential scans off, the plan shows which index can answer.
    const plan = await withTransaction(te.db.pool, async (tx) => {
      await tx.query(`SET LOCAL enable_seqscan = off`);
      const { rows } = await tx.query<{ "QUERY PLAN": string }>(
        `EXPLAIN ${runsToMoveSql(true)}`,
        [te.env.id, ["side-q"], ["QUEUED", "DELAYED", "WAITING", "PENDING_VERSION"]],
      );
      return rows.map((r) => r["QUERY PLAN"]).join("\n");
    });
    expect(plan).toMatch(/Index (Only )?Scan using runs_limited_live|Bitmap Index Scan on runs_limited_live/);
  });
});
