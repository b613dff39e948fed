// Bulk actions in the engine: a filter's or a list's runs canceled or replayed a chunk per
// transaction, with progress after each chunk, an abort that stops before the next one, a
// processor that dies mid-chunk (its chunk is done again, once) and two processors at once
// (each chunk done by one of them).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  abortBulkAction, cancelRun, ConflictError, createBulkAction, FakeClock, NotFoundError, processNextChunk, retrieveBulkAction, triggerRun, type EngineDeps,
} from "@svc/runtime/engine";
import { startTestEngine, type TestEngine } from "@svc/runtime/testing";

const T0 = new Date("2031-05-06T07:00:00.000Z");
const clock = new FakeClock(T0);
let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => te?.close());

/** Triggers `n` runs of `task`, a millisecond apart, the clock then moved past them. */
async function triggerMany(task: string, n: number, payload: (i: number) => unknown = (i) => ({ i })): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    clock.advance(1);
    ids.push((await triggerRun(te.engine, te.env, task, payload(i))).id);
  }
  clock.advance(1000);
  return ids;
}

async function statusesOf(ids: string[]): Promise<Record<string, number>> {
  const { rows } = await te.db.pool.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM runs WHERE id = ANY($1) GROUP BY status`, [ids]);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Waits until `n` backends of this database wait for a lock (row-lock choreography, no sleeps of fixed length). */
async function waitForLockWaits(n: number): Promise<void> {
  for (;;) {
    const { rows } = await te.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n >= n) return;
  }
}

/** Runs chunks on `deps` until no action is pending; how many it did. */
async function drain(deps: EngineDeps, chunkSize: number): Promise<number> {
  let chunks = 0;
  while (await processNextChunk(deps, { chunkSize })) chunks++;
  return chunks;
}

describe("bulk actions", () => {
  it("cancels a filter's runs a chunk at a time, with progress, and counts runs already finished as failed", async () => {
    const ids = await triggerMany("bulk-cancel", 25);
    const others = await triggerMany("bulk-other", 3);
    await cancelRun(te.engine, te.env.id, ids[0]!);
    await cancelRun(te.engine, te.env.id, ids[1]!);

    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", name: "stop them", selection: { filters: { taskIdentifiers: ["bulk-cancel"] } } });
    expect(action).toMatchObject({ status: "PENDING", total: 25, succeeded: 0, failed: 0, name: "stop them", action: "CANCEL" });
    expect(action.id).toMatch(/^bulk_/);

    const first = await processNextChunk(te.engine, { chunkSize: 10 });
    expect(first).toMatchObject({ bulkActionId: action.id, handled: 10, status: "PENDING" });
    const after = await retrieveBulkAction(te.engine, te.env.id, action.id);
    expect(after.succeeded + after.failed).toBe(10);
    expect(after.status).toBe("PENDING");

    expect(await drain(te.engine, 10)).toBe(2);
    const done = await retrieveBulkAction(te.engine, te.env.id, action.id);
    expect(done).toMatchObject({ status: "COMPLETED", total: 25, succeeded: 23, failed: 2 });
    expect(done.completed_at).toEqual(clock.now());
    expect(await statusesOf(ids)).toEqual({ CANCELED: 25 });
    expect(await statusesOf(others)).toEqual({ QUEUED: 3 });
  });

  it("replays each run of the set once, and never the replays it made", async () => {
    const ids = await triggerMany("bulk-replay", 12, (i) => ({ n: i }));
    const action = await createBulkAction(te.engine, te.env.id, { action: "REPLAY", selection: { filters: { taskIdentifiers: ["bulk-replay"] } } });
    expect(action.total).toBe(12);
    // The clock does not move: the replays are made at the action's own instant, and still left out.
    expect(await drain(te.engine, 5)).toBe(3);
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", succeeded: 12, failed: 0 });
    const { rows } = await te.db.pool.query<{ payload: string }>(`SELECT payload FROM runs WHERE task_identifier = 'bulk-replay' AND NOT (id = ANY($1)) ORDER BY payload`, [ids]);
    expect(rows.map((r) => JSON.parse(r.payload).n).sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
  });

  it("works on a list of ids, counting ids of no run of the environment as failed", async () => {
    const ids = await triggerMany("bulk-ids", 4);
    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", selection: { runIds: [ids[0]!, ids[2]!, ids[2]!, "run_nosuchrun"] } });
    expect(action.total).toBe(3);
    await drain(te.engine, 2);
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", succeeded: 2, failed: 1 });
    expect(await statusesOf(ids)).toEqual({ CANCELED: 2, QUEUED: 2 });
  });

  it("stops at the next chunk when aborted, and refuses to abort a finished or unknown action", async () => {
    const ids = await triggerMany("bulk-abort", 30);
    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", selection: { filters: { taskIdentifiers: ["bulk-abort"] } } });
    await processNextChunk(te.engine, { chunkSize: 10 });
    const aborted = await abortBulkAction(te.engine, te.env.id, action.id);
    expect(aborted).toMatchObject({ status: "ABORTED", succeeded: 10 });
    expect(await processNextChunk(te.engine, { chunkSize: 10 })).toBeNull();
    expect(await statusesOf(ids)).toEqual({ CANCELED: 10, QUEUED: 20 });
    await expect(abortBulkAction(te.engine, te.env.id, action.id)).rejects.toBeInstanceOf(ConflictError);
    await expect(abortBulkAction(te.engine, te.env.id, "bulk_nosuchaction")).rejects.toBeInstanceOf(NotFoundError);
    await expect(retrieveBulkAction(te.engine, te.env.id, "bulk_nosuchaction")).rejects.toBeInstanceOf(NotFoundError);
    // Another environment's id is unknown here.
    await expect(retrieveBulkAction(te.engine, te.project.environments.prod.id, action.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("lets a chunk under way finish when aborted, and starts no other", async () => {
    const ids = await triggerMany("bulk-abort-midway", 12);
    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", selection: { filters: { taskIdentifiers: ["bulk-abort-midway"] } } });
    // Hold the newest run: the first chunk stops at it, holding the action's row.
    const holder = await te.db.pool.connect();
    let chunk: Promise<unknown>;
    let abort: Promise<unknown>;
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, [ids.at(-1)]);
      chunk = processNextChunk(te.engine, { chunkSize: 5 });
      await waitForLockWaits(1);
      abort = abortBulkAction(te.engine, te.env.id, action.id);
      // The abort waits for the chunk's hold on the action.
      await waitForLockWaits(2);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    expect(await chunk!).toMatchObject({ handled: 5, status: "PENDING" });
    expect(await abort!).toMatchObject({ status: "ABORTED", succeeded: 5 });
    expect(await processNextChunk(te.engine, { chunkSize: 5 })).toBeNull();
    expect(await statusesOf(ids)).toEqual({ CANCELED: 5, QUEUED: 7 });
  });

  it("does a chunk again, once, when its processor dies in the middle of it, and another takes over", async () => {
    const ids = await triggerMany("bulk-crash", 25);
    const action = await createBulkAction(te.engine, te.env.id, { action: "CANCEL", selection: { filters: { taskIdentifiers: ["bulk-crash"] } } });
    const dying = await te.connect({ poolMax: 2, applicationName: "svc-bulk-dying" });
    try {
      expect(await processNextChunk(dying.engine, { chunkSize: 10 })).toMatchObject({ handled: 10 });
      // The second chunk is the runs 15th to 6th newest: hold the 10th newest, so the chunk
      // stops halfway, its first cancels made, and kill the processor's connection there.
      const newestFirst = [...ids].reverse();
      const holder = await te.db.pool.connect();
      try {
        await holder.query("BEGIN");
        await holder.query(`SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, [newestFirst[14]]);
        const chunk = processNextChunk(dying.engine, { chunkSize: 10 });
        const failed = expect(chunk).rejects.toThrow();
        let pid: number | undefined;
        while (pid === undefined) {
          const { rows } = await te.db.pool.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE application_name = 'svc-bulk-dying' AND wait_event_type = 'Lock'`,
          );
          pid = rows[0]?.pid;
        }
        await te.db.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
        await failed;
      } finally {
        await holder.query("ROLLBACK");
        holder.release();
      }
      // Nothing of the dead chunk stayed: the first 10 are canceled, the rest still queued.
      expect(await statusesOf(ids)).toEqual({ CANCELED: 10, QUEUED: 15 });
      expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "PENDING", succeeded: 10, failed: 0 });
    } finally {
      await dying.close();
    }
    await drain(te.engine, 10);
    // A chunk applied twice would count its runs again as failed (already canceled); one skipped would leave them queued.
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", succeeded: 25, failed: 0 });
    expect(await statusesOf(ids)).toEqual({ CANCELED: 25 });
  });

  it("lets two processors work at once, each chunk done by one of them", async () => {
    const ids = await triggerMany("bulk-race", 40, (i) => ({ n: i }));
    const action = await createBulkAction(te.engine, te.env.id, { action: "REPLAY", selection: { filters: { taskIdentifiers: ["bulk-race"] } } });
    const other = await te.connect({ poolMax: 3 });
    try {
      const work = async (deps: EngineDeps) => {
        let chunks = 0;
        for (;;) {
          const chunk = await processNextChunk(deps, { chunkSize: 4 });
          if (chunk) chunks++;
          else if ((await retrieveBulkAction(deps, te.env.id, action.id)).status !== "PENDING") return chunks;
        }
      };
      const [a, b] = await Promise.all([work(te.engine), work(other.engine)]);
      // 40 runs in chunks of 4, and the empty last one that completes the action.
      expect(a + b).toBe(11);
    } finally {
      await other.close();
    }
    expect(await retrieveBulkAction(te.engine, te.env.id, action.id)).toMatchObject({ status: "COMPLETED", succeeded: 40, failed: 0 });
    const { rows } = await te.db.pool.query<{ payload: string }>(`SELECT payload FROM runs WHERE task_identifier = 'bulk-race' AND NOT (id = ANY($1))`, [ids]);
    expect(rows.map((r) => JSON.parse(r.payload).n).sort((a, b) => a - b)).toEqual([...Array(40).keys()]);
  });
});
