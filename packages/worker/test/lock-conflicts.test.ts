// Transactions that lock the same rows in opposite orders deadlock; Postgres then aborts one of
// them (40P01). A cancel racing a completion, or a child's ending racing its parent's cancel, must
// still both take effect: neither may fail with an error nor leave a run to be executed again.
// Each race is set up deterministically: a third connection holds a row lock until both sides are
// blocked in the order that closes the cycle.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelRun, completeToken, createToken, triggerRun } from "@svc/runtime/engine";
import { task, tasks, wait } from "@svc/runtime";
import { blockedBackends, eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const gates = new Map<string, () => void>();
const gate = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));

const child = task({
  id: "lock-child",
  run: async (_payload: unknown, { ctx }) => {
    await gate(ctx.run.id);
    return "child done";
  },
});
const parent = task({
  id: "lock-parent",
  run: async () => {
    const result = await tasks.triggerAndWait("lock-child", {});
    return result.ok ? result.output : "child failed";
  },
});
const waiter = task({
  id: "lock-waiter",
  run: async (payload: { tokenId: string }) => (await wait.forToken(payload.tokenId)).ok,
});

beforeAll(async () => {
  te = await startTestEngine();
  tw = await startTestWorker(te, [child, parent, waiter]);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});


/** Holds the ledger rows of `runId` FOR UPDATE until the returned function is called. */
async function holdLedger(runId: string): Promise<() => Promise<void>> {
  const client = await te.db.pool.connect();
  await client.query("BEGIN");
  const { rowCount } = await client.query(`SELECT 1 FROM run_ledger WHERE run_id = $1 FOR UPDATE`, [runId]);
  expect(rowCount).toBeGreaterThan(0);
  return async () => {
    await client.query("COMMIT");
    client.release();
  };
}

describe("lock-order conflicts", () => {
  it("a token completion and a cancel of the run waiting on it both succeed", async () => {
    const tokenId = (await createToken(te.engine, te.env.id, {})).waitpoint.id;
    const suspended = tw.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "lock-waiter", { tokenId });
    await suspended;

    const release = await holdLedger(id);
    // The completion locks the token, then waits for the ledger row; the cancel locks the run,
    // then waits for the same ledger row behind it.
    const completion = completeToken(te.engine, te.db.pool, tokenId, { late: true });
    await eventually(async () => (await blockedBackends(te)) >= 1);
    const cancel = cancelRun(te.engine, te.env.id, id);
    await eventually(async () => (await blockedBackends(te)) >= 2);
    await release();

    const [completed, canceled] = await Promise.allSettled([completion, cancel]);
    expect(completed.status).toBe("fulfilled");
    expect(canceled.status).toBe("fulfilled");
    // Either side may be the one Postgres aborts; the other commits first. When the completion
    // does, the run is offered to the worker at once and may finish before the cancel runs again:
    // the cancel then finds it final. Otherwise the run is canceled, detached from its wait.
    const row = await eventually(async () => {
      const r = await getRunRow(te, id);
      return ["CANCELED", "COMPLETED"].includes(r.status) && r;
    });
    if (row.status === "COMPLETED") expect(JSON.parse(row.output!).json).toBe(true);
    expect((await te.db.pool.query(`SELECT status FROM waitpoints WHERE id = $1`, [tokenId])).rows[0].status).toBe("COMPLETED");
  });

  it("a child ending while its parent is canceled: both succeed and the child is not executed again", async () => {
    const { id: parentId } = await triggerRun(te.engine, te.env, "lock-parent", {});
    const childId = await eventually(async () => (await te.db.pool.query(`SELECT id FROM runs WHERE parent_run_id = $1`, [parentId])).rows[0]?.id as string);
    await eventually(async () => gates.has(childId));
    await eventually(async () => (await getRunRow(te, parentId)).status === "WAITING");

    const release = await holdLedger(parentId);
    // The child's ending locks the child, its waitpoint, then waits for the parent's ledger row;
    // the cancel locks the parent, then waits for the child.
    // Either side may be the one Postgres aborts; the other commits first. Both outcomes are
    // consistent: the child COMPLETED (the cancel then finds it final) or CANCELED with the
    // parent (its ending then writes nothing).
    const ended = new Promise<void>((resolve) => {
      const offs = [
        tw.worker.events.on("runFinished", (e) => e.runId === childId && done()),
        tw.worker.events.on("runAbandoned", (e) => e.runId === childId && done()),
      ];
      const done = () => (offs.forEach((off) => off()), resolve());
    });
    gates.get(childId)!();
    await eventually(async () => (await blockedBackends(te)) >= 1);
    const cancel = cancelRun(te.engine, te.env.id, parentId);
    await eventually(async () => (await blockedBackends(te)) >= 2);
    await release();

    await expect(cancel).resolves.toMatchObject({ id: parentId });
    await ended;
    // As above: a child whose ending commits first has its parent offered to the worker at once,
    // and the parent may complete before the cancel runs again.
    const parentRow = await eventually(async () => {
      const r = await getRunRow(te, parentId);
      return ["CANCELED", "COMPLETED"].includes(r.status) && r;
    });
    const childRow = await getRunRow(te, childId);
    expect(["COMPLETED", "CANCELED"]).toContain(childRow.status);
    if (parentRow.status === "COMPLETED") expect(childRow.status).toBe("COMPLETED");
    expect(childRow.attempt_number).toBe(1);
    const attempts = await te.db.pool.query(`SELECT number, status FROM run_attempts WHERE run_id = $1`, [childId]);
    expect(attempts.rows).toEqual([{ number: 1, status: childRow.status }]);
  });
});
