// The resume fast path: a completed token that no live worker could be offered (see
// resume-offers.test.ts) wakes every worker through NOTIFY, and one claims the run directly by id,
// with a lease. A resume nobody took (here: the only slot is busy) stays due in `runs`, and the
// worker claims it there when a slot frees.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { eventually, getRunRow, hideFromOffers, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let te: TestEngine;
let tw: TestWorker;
const afterWait = new Map<string, { leased: boolean; resumeDue: boolean; calls: number }>();
const gates = new Map<string, () => void>();
const gate = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));

const resumable = task({
  id: "resumable",
  run: async (payload: { tokenId: string; secondTokenId?: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    // What the run row says while the resumed execution runs.
    const { rows } = await te.db.pool.query<{ leased: boolean; resume_due: boolean }>(
      `SELECT lease_expires_at IS NOT NULL AS leased, resume_due_at IS NOT NULL AS resume_due FROM runs WHERE id = $1`,
      [ctx.run.id],
    );
    const seen = afterWait.get(ctx.run.id);
    afterWait.set(ctx.run.id, { leased: rows[0]!.leased, resumeDue: rows[0]!.resume_due, calls: (seen?.calls ?? 0) + 1 });
    if (payload.secondTokenId) {
      await gate(`${ctx.run.id}:before-second-wait`);
      await wait.forToken(payload.secondTokenId);
    }
    return "resumed";
  },
});
const busy = task({ id: "busy", run: async (_p: unknown, { ctx }) => gate(ctx.run.id) });

async function newToken() {
  return (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
}
async function complete(tokenId: string) {
  return withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, {}));
}
async function resumeDueAt(runId: string): Promise<Date | null> {
  const { rows } = await te.db.pool.query<{ resume_due_at: Date | null }>(`SELECT resume_due_at FROM runs WHERE id = $1`, [runId]);
  return rows[0]!.resume_due_at;
}

/** A run suspended on a fresh token while a `busy` run holds the worker's only slot. */
async function waitingBehindBusySlot(): Promise<{ id: string; tokenId: string; holder: string }> {
  const tokenId = await newToken();
  const { id } = await triggerRun(te.engine, te.env, "resumable", { tokenId });
  await tw.worker.events.next("runSuspended", (e) => e.runId === id);
  const holder = (await triggerRun(te.engine, te.env, "busy", {})).id;
  await eventually(async () => gates.has(holder));
  return { id, tokenId, holder };
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
  // One slot, so that a busy worker cannot take the fast path; time moves only when a test says.
  tw = await startTestWorker(te, [resumable, busy], { concurrency: 1, timerLoop: false });
  await hideFromOffers(te, tw);
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("resume fast path", () => {
  it("resumes a completed token's run at once, by id, with a lease", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "resumable", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const result = await complete(tokenId);
    expect(result).toMatchObject({ changed: true, resumedRunIds: [id] });
    expect((await resumed).via).toBe("fast-path");
    expect((await done).status).toBe("COMPLETED");
    // The claim took the lease and cleared the resume mark before the code after the wait ran.
    expect(afterWait.get(id)).toEqual({ leased: true, resumeDue: false, calls: 1 });
    const lease = await te.db.pool.query(`SELECT lease_expires_at, resume_due_at FROM runs WHERE id = $1`, [id]);
    expect(lease.rows).toEqual([{ lease_expires_at: null, resume_due_at: null }]); // released when the run finished
  });

  it("leaves a resume nobody took due in runs, and claims it there when a slot frees", async () => {
    const { id, tokenId, holder } = await waitingBehindBusySlot();
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id, 30_000);
    const completedAt = clock.now();
    await complete(tokenId);
    // The NOTIFY came while the only slot was taken: the resume stays due, recorded on the run.
    expect(await resumeDueAt(id)).toEqual(completedAt);
    expect((await getRunRow(te, id)).status).toBe("WAITING");
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id, 30_000);
    gates.get(holder)!();
    expect((await resumed).via).toBe("claimed");
    expect((await done).status).toBe("COMPLETED");
    expect(afterWait.get(id)).toMatchObject({ leased: true, resumeDue: false, calls: 1 });
  });

  it("lets drain() return as soon as a leased execution (here an offered one) suspends again", async () => {
    const own = await startTestWorker(te, [resumable], { concurrency: 2 });
    try {
      const [first, second] = [await newToken(), await newToken()];
      const { id } = await triggerRun(te.engine, te.env, "resumable", { tokenId: first, secondTokenId: second });
      await Promise.race([own, tw].map((w) => w.worker.events.next("runSuspended", (e) => e.runId === id)));
      await tw.stop(); // only `own` is left to take the resume
      await complete(first);
      await eventually(async () => gates.has(`${id}:before-second-wait`));
      const suspended = own.worker.events.next("runSuspended", (e) => e.runId === id);
      const drained = own.worker.drain().then(() => "drained");
      gates.get(`${id}:before-second-wait`)!();
      await suspended;
      expect(await Promise.race([drained, new Promise((resolve) => setTimeout(() => resolve("still draining"), 5000))])).toBe("drained");
      expect((await getRunRow(te, id)).status).toBe("WAITING");
    } finally {
      await own.stop();
    }
  });
});
