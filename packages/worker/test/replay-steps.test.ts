// Replay safety of the in-run SDK (public surface: tasks, wait, step): what a resumed run gets back
// from its ledger instead of doing again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, tasks, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
const calls: Record<string, number> = {};
const count = (key: string) => (calls[key] = (calls[key] ?? 0) + 1);
const tokensSeen = new Map<string, string[]>();

const twoWaits = task({
  id: "two-waits",
  run: async (payload: { a: string; b: string }, { ctx }) => {
    const one = await step.run("one", () => ({ n: count(`${ctx.run.id}:one`), at: new Date(0) }));
    await wait.forToken(payload.a);
    const two = await step.run("two", () => count(`${ctx.run.id}:two`));
    await wait.forToken(payload.b);
    const three = await step.run("three", () => count(`${ctx.run.id}:three`));
    count(`${ctx.run.id}:body-end`);
    return { one, two, three, oneAtIsDate: one.at instanceof Date };
  },
});

const ownToken = task({
  id: "own-token",
  run: async (_payload: unknown, { ctx }) => {
    const token = await wait.createToken({ timeout: "1h", tags: ["own"] });
    tokensSeen.set(ctx.run.id, [...(tokensSeen.get(ctx.run.id) ?? []), token.id]);
    const result = await wait.forToken<{ answer: number }>(token);
    return { tokenId: token.id, answer: result.unwrap().answer };
  },
});

const child = task({
  id: "batch-child",
  run: async (payload: { n: number }) => {
    // Later items finish first, so the order of the results cannot come from completion order.
    await new Promise((resolve) => setTimeout(resolve, (4 - payload.n) * 40));
    if (payload.n === 2) throw new Error("child 2 fails");
    return { n: payload.n, squared: payload.n * payload.n };
  },
  retry: { maxAttempts: 1 },
});
const batchParent = task({
  id: "batch-parent",
  run: async () => {
    const { runs } = await tasks.batchTriggerAndWait<{ n: number; squared: number }>("batch-child", [0, 1, 2, 3].map((n) => ({ payload: { n } })));
    return runs.map((r) => (r.ok ? { ok: true, id: r.id, output: r.output } : { ok: false, id: r.id, message: (r.error as Error).message }));
  },
});

async function complete(tokenId: string, output: unknown) {
  return withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, output));
}
async function newToken() {
  return (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  tw = await startTestWorker(te, [twoWaits, ownToken, child, batchParent], { timerLoop: false });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("replay safety", () => {
  it("returns recorded step.run results on replay without running them again, across two waits", async () => {
    const [a, b] = [await newToken(), await newToken()];
    const { id } = await triggerRun(te.engine, te.env, "two-waits", { a, b });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const firstResume = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const suspendedAgain = tw.worker.events.next("runSuspended", (e) => e.runId === id);
    await complete(a, {});
    expect((await firstResume).replayedEntries).toBe(2); // step "one" + the wait on a
    await suspendedAgain;
    const secondResume = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(b, {});
    expect((await secondResume).replayedEntries).toBe(4);
    expect((await done).status).toBe("COMPLETED");

    expect(calls[`${id}:one`]).toBe(1);
    expect(calls[`${id}:two`]).toBe(1);
    expect(calls[`${id}:three`]).toBe(1);
    expect(calls[`${id}:body-end`]).toBe(1);
    // The replayed value is the recorded one, superjson round-trip included.
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual({ one: { n: 1, at: "1970-01-01T00:00:00.000Z" }, two: 1, three: 1, oneAtIsDate: true });
    const ledger = await te.db.pool.query(`SELECT step_key, kind, target FROM run_ledger WHERE run_id = $1 ORDER BY step_key`, [id]);
    expect(ledger.rows).toEqual([
      { step_key: "#0", kind: "step", target: "one" },
      { step_key: "#1", kind: "token", target: a },
      { step_key: "#2", kind: "step", target: "two" },
      { step_key: "#3", kind: "token", target: b },
      { step_key: "#4", kind: "step", target: "three" },
    ]);
  });

  it("gives wait.createToken inside a run the same token on replay, so waiting on it works and no second token is made", async () => {
    const before = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM waitpoints WHERE type = 'MANUAL'`);
    const { id } = await triggerRun(te.engine, te.env, "own-token", {});
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const [tokenId] = tokensSeen.get(id)!;
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId!, { answer: 42 });
    expect((await done).status).toBe("COMPLETED");

    expect(tokensSeen.get(id)).toEqual([tokenId, tokenId]);
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toEqual({ tokenId, answer: 42 });
    const after = await te.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM waitpoints WHERE type = 'MANUAL'`);
    expect(after.rows[0]!.n - before.rows[0]!.n).toBe(1);
    const token = await te.db.pool.query(`SELECT status, tags FROM waitpoints WHERE id = $1`, [tokenId]);
    expect(token.rows).toEqual([{ status: "COMPLETED", tags: ["own"] }]);
  });

  it("returns the children's results of batchTriggerAndWait in the order they were given", async () => {
    const { id } = await triggerRun(te.engine, te.env, "batch-parent", {});
    const done = await tw.worker.events.next("runFinished", (e) => e.runId === id);
    expect(done.status).toBe("COMPLETED");
    const children = await te.db.pool.query<{ id: string; batch_index: number; finished_at: Date }>(
      `SELECT id, batch_index, finished_at FROM runs WHERE parent_run_id = $1 ORDER BY batch_index`,
      [id],
    );
    expect(children.rows).toHaveLength(4);
    const results = JSON.parse((await getRunRow(te, id)).output!).json;
    expect(results).toEqual([
      { ok: true, id: children.rows[0]!.id, output: { n: 0, squared: 0 } },
      { ok: true, id: children.rows[1]!.id, output: { n: 1, squared: 1 } },
      { ok: false, id: children.rows[2]!.id, message: "child 2 fails" },
      { ok: true, id: children.rows[3]!.id, output: { n: 3, squared: 9 } },
    ]);
  });

  it("refuses durable calls outside a run with a clear error", async () => {
    await expect(wait.forToken("waitpoint_abc")).rejects.toThrow(
      "wait.forToken() can only be called inside a task run (from a task's run function, executed by an svc worker).",
    );
    await expect(wait.for({ seconds: 1 })).rejects.toThrow(/wait\.for\(\) can only be called inside a task run/);
    expect(() => step.run("x", () => 1)).toThrow(/step\.run\(\) can only be called inside a task run/);
    await expect(tasks.triggerAndWait("batch-child", {})).rejects.toThrow(/tasks\.triggerAndWait\(\) can only be called inside a task run/);
  });
});
