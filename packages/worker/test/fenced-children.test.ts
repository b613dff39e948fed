// An execution that has lost its run (its lease lapsed and another execution took over, or the run
// was canceled) must not create child runs, nor tokens: triggerAndWait's and wait.createToken's
// transactions are fenced before they insert anything. Driven by a FakeClock and timers.tick(); gates hold each execution in place.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, tasks, wait } from "@svc/runtime";
import { blockedBackends, eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const LEASE_MS = 3_600_000; // renewals every 20 min of real time: none during the test
let te: TestEngine;
let tw: TestWorker;
const gates = new Map<string, () => void>();
const opened = new Set<string>();
/** Holds the code until the test opens `key`; an opened gate lets later replays straight through. */
const gate = (key: string) => (opened.has(key) ? Promise.resolve() : new Promise<void>((resolve) => gates.set(key, resolve)));
const open = (key: string) => {
  opened.add(key);
  gates.get(key)!();
};

const child = task({ id: "fenced-child", run: async () => "child done" });
const parent = task({
  id: "fenced-parent",
  run: async (payload: { tokenId: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    // Each execution stops here until the test lets it go on.
    await gate(`${ctx.run.id}:${ctx.attempt.number}`);
    const result = await tasks.triggerAndWait("fenced-child", {});
    return result.ok ? result.output : "child failed";
  },
});

const triggersWhenLetGo = task({
  id: "fenced-trigger-on-go",
  run: async (_payload: unknown, { ctx }) => {
    await gate(`${ctx.run.id}:go`);
    const result = await tasks.triggerAndWait("fenced-child", {});
    return result.ok ? result.output : "child failed";
  },
});

const createsToken = task({
  id: "fenced-token",
  run: async (payload: { tokenId: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    await gate(`${ctx.run.id}:${ctx.attempt.number}`);
    return (await wait.createToken({ timeout: "1h", tags: [`by:${ctx.run.id}`] })).id;
  },
});

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [child, parent, triggersWhenLetGo, createsToken], { timerLoop: false, leaseMs: LEASE_MS });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

async function childrenOf(runId: string) {
  const { rows } = await te.db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE parent_run_id = $1`, [runId]);
  return rows.map((r) => r.id);
}

/**
 * A run of `taskId` (which waits on a token, then at its gate) resumed by an offer as a
 * leased execution, attempt 1, held at its gate; then its lease lapses (the worker stalled, say)
 * and the run is started again as attempt 2, held at its own gate. Returns the run id.
 */
async function takenOverWhileHeld(taskId: string): Promise<string> {
  const tokenId = (await createToken(te.engine, te.env.id, {})).waitpoint.id;
  const suspended = tw.worker.events.next("runSuspended");
  const { id } = await triggerRun(te.engine, te.env, taskId, { tokenId });
  await suspended;

  // A heartbeat first: an earlier test moved the clock past the worker's registry entry.
  await tw.worker.checkExecutions();
  const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
  await withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
  expect((await resumed).via).toBe("offer");
  await eventually(async () => gates.has(`${id}:1`));

  const takeover = tw.worker.events.next("runStarted", (e) => e.runId === id);
  clock.advance(LEASE_MS + 60_000);
  expect((await tw.worker.timers.tick())["lapsed-leases"]).toBe(1);
  expect((await takeover).attempt).toBe(2);
  await eventually(async () => gates.has(`${id}:2`));
  return id;
}

describe("an execution whose lease lapsed while it still runs", () => {
  it("creates no child run with triggerAndWait: only the execution that took over does", async () => {
    const id = await takenOverWhileHeld("fenced-parent");

    // The stale execution goes on and asks for a child: it is fenced, and leaves nothing behind.
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    open(`${id}:1`);
    expect((await abandoned).reason).toBe("fenced");
    expect(await childrenOf(id)).toEqual([]);

    // The live execution's child is the run's only one.
    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    open(`${id}:2`);
    expect((await finished).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("child done");
    expect(await childrenOf(id)).toHaveLength(1);
  });
});

describe("an execution whose lease lapsed, creating a token", () => {
  it("creates no token with wait.createToken: the run's one token is the live execution's", async () => {
    const id = await takenOverWhileHeld("fenced-token");

    const tokensBy = async () =>
      (await te.db.pool.query<{ id: string }>(`SELECT id FROM waitpoints WHERE $1 = ANY(tags)`, [`by:${id}`])).rows.map((r) => r.id);
    const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
    open(`${id}:1`);
    expect((await abandoned).reason).toBe("fenced");
    expect(await tokensBy()).toEqual([]);

    const finished = tw.worker.events.next("runFinished", (e) => e.runId === id);
    open(`${id}:2`);
    expect((await finished).status).toBe("COMPLETED");
    const created = await tokensBy();
    expect(created).toHaveLength(1);
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe(created[0]);
  });
});

describe("a cancel while the run triggers a child with triggerAndWait", () => {
  it("cancels the child too: the child is not created behind the cancel's back", async () => {
    const started = tw.worker.events.next("runStarted");
    const { id } = await triggerRun(te.engine, te.env, "fenced-trigger-on-go", {});
    await started;
    await eventually(async () => gates.has(`${id}:go`));
    // A descendant no worker serves (it stays QUEUED), locked by the test: the cancel's cascade
    // stops on it after the run itself is CANCELED (row locked) and its statement has its snapshot.
    const pending = await triggerRun(te.engine, te.env, "fenced-unserved", {}, {}, { parentRunId: id });
    const holder = await te.db.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, [pending.id]);
      const canceling = cancelRun(te.engine, te.env.id, id);
      await eventually(async () => (await blockedBackends(te)) === 1);
      // The run, not yet told (the cancel has not committed), triggers its child: it waits for the
      // cancel's lock on the run, wherever its transaction needs it.
      const abandoned = tw.worker.events.next("runAbandoned", (e) => e.runId === id);
      open(`${id}:go`);
      await eventually(async () => (await blockedBackends(te)) === 2);
      await holder.query("ROLLBACK");
      const canceled = await canceling;
      await abandoned;
      // Every child the run has is canceled: none escaped the cascade to run on its own.
      const children = await childrenOf(id);
      expect(canceled.canceledRunIds.sort()).toEqual([id, ...children].sort());
      const { rows } = await te.db.pool.query<{ status: string }>(`SELECT status FROM runs WHERE parent_run_id = $1`, [id]);
      expect(rows.map((r) => r.status)).toEqual(["CANCELED"]);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
    }
  });
});
