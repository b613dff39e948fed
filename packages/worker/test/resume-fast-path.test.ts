// The resume fast path: a completed token wakes a worker through NOTIFY and it claims the run
// directly (a lease, no pg-boss job). When it cannot, the pg-boss backstop job resumes the run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, RESUME_BACKSTOP_SECONDS, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { eventually, getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;
let tw: TestWorker;
const afterWait = new Map<string, { jobId: string | null; leased: boolean; calls: number }>();
const gates = new Map<string, () => void>();
const gate = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve));

const resumable = task({
  id: "resumable",
  run: async (payload: { tokenId: string; secondTokenId?: string }, { ctx }) => {
    await wait.forToken(payload.tokenId);
    // What the run row says while the resumed execution runs.
    const { rows } = await te.db.pool.query<{ job_id: string | null; leased: boolean }>(
      `SELECT job_id, lease_expires_at IS NOT NULL AS leased FROM runs WHERE id = $1`,
      [ctx.run.id],
    );
    const seen = afterWait.get(ctx.run.id);
    afterWait.set(ctx.run.id, { jobId: rows[0]!.job_id, leased: rows[0]!.leased, calls: (seen?.calls ?? 0) + 1 });
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
async function resumeJob(runId: string) {
  const { rows } = await te.db.pool.query<{ state: string; ready: boolean }>(
    `SELECT state, start_after <= now() AS ready FROM pgboss.job WHERE data->>'runId' = $1 AND data->>'kind' = 'resume'`,
    [runId],
  );
  return rows[0];
}

beforeAll(async () => {
  te = await startTestEngine();
  // One slot, so that a busy worker cannot take the fast path.
  tw = await startTestWorker(te, [resumable, busy], { concurrency: 1 });
});
afterAll(async () => {
  await tw?.stop();
  await te?.close();
});

describe("resume fast path", () => {
  it("resumes a completed token's run at once with a lease and no pg-boss job, and deletes the backstop job", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "resumable", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id);
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id);
    const completedAt = Date.now();
    await complete(tokenId);
    expect((await resumed).via).toBe("fast-path");
    expect(Date.now() - completedAt).toBeLessThan(RESUME_BACKSTOP_SECONDS * 1000);
    expect((await done).status).toBe("COMPLETED");
    expect(afterWait.get(id)).toEqual({ jobId: null, leased: true, calls: 1 });
    const run = await getRunRow(te, id);
    const lease = await te.db.pool.query(`SELECT lease_expires_at FROM runs WHERE id = $1`, [id]);
    expect(lease.rows).toEqual([{ lease_expires_at: null }]); // released when the run finished

    // The worker that took the fast path deleted the backstop job, so nobody fetches it for nothing.
    await eventually(async () => (await resumeJob(id)) === undefined || (await resumeJob(id)) === null, 15_000);
    expect(afterWait.get(id)!.calls).toBe(1);
    expect((await getRunRow(te, id)).updated_at).toEqual(run.updated_at);
  });

  it("leaves the run to the pg-boss backstop job when the worker has no free slot, which resumes it", async () => {
    const tokenId = await newToken();
    const { id } = await triggerRun(te.engine, te.env, "resumable", { tokenId });
    await tw.worker.events.next("runSuspended", (e) => e.runId === id);
    const holder = await triggerRun(te.engine, te.env, "busy", {});
    await eventually(async () => gates.has(holder.id));
    const resumed = tw.worker.events.next("runResumed", (e) => e.runId === id, 30_000);
    await complete(tokenId);
    // The NOTIFY came while the only slot was taken; the backstop job becomes due meanwhile.
    await eventually(async () => (await resumeJob(id))?.ready, 15_000);
    expect((await getRunRow(te, id)).status).toBe("WAITING");
    const done = tw.worker.events.next("runFinished", (e) => e.runId === id, 30_000);
    gates.get(holder.id)!();
    expect((await resumed).via).toBe("job");
    expect((await done).status).toBe("COMPLETED");
    expect(afterWait.get(id)!.jobId).not.toBeNull();
    expect(afterWait.get(id)!.leased).toBe(false);
  });

  it("lets drain() return as soon as a fast-path execution suspends again", async () => {
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
