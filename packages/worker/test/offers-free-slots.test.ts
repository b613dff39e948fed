// Resume offers go to a worker with a free slot (migration 0028): a worker records in the registry
// when its last free slot is taken and when one is free again (workers.full_since), and a completion
// offers a run to a worker that is not full whenever one is live, the one that suspended the run
// first. Covered here: the flag's transitions (and only those are written), an offer that passes a
// full suspending worker by for a free one (no give-back), the suspending worker still preferred when
// it has a slot, and every worker full: the offer is given back and the run still resumes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeToken, createToken, FakeClock, triggerRun, withTransaction } from "@svc/runtime/engine";
import { task, wait } from "@svc/runtime";
import { markWorkerFull } from "../src/registry/workers.ts";
import { getRunRow, startTestEngine, startTestWorker, triggerAndAwait, type TestEngine, type TestWorker } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-25T04:00:00Z"));
let te: TestEngine;

const offered = task({
  id: "offered",
  run: async (payload: { tokenId: string }) => {
    await wait.forToken(payload.tokenId);
    return "resumed";
  },
});

/** Holds its slot until its gate is opened. */
const gates = new Map<string, () => void>();
const busy = task({ id: "busy", run: async (_p: unknown, { ctx }) => new Promise<void>((resolve) => gates.set(ctx.run.id, resolve)) });

/** Starts a `busy` run on whichever worker of `workers` takes it; resolves once it holds the slot. */
async function occupySlot(workers: TestWorker[]): Promise<{ runId: string; release(): void }> {
  const { id } = await triggerAndAwait(workers, "runStarted", () => triggerRun(te.engine, te.env, "busy", {}));
  return { runId: id, release: () => gates.get(id)!() };
}

/** A run of `offered` suspended on `w` (the only live worker of the task when it starts). */
async function suspendedOn(w: TestWorker): Promise<{ id: string; tokenId: string }> {
  const tokenId = (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
  const { id } = await triggerAndAwait([w], "runSuspended", () => triggerRun(te.engine, te.env, "offered", { tokenId }));
  return { id, tokenId };
}

const complete = (tokenId: string) => withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, { ok: true }));
const fullSince = async (w: TestWorker) =>
  (await te.db.pool.query<{ full_since: Date | null }>(`SELECT full_since FROM workers WHERE id = $1`, [w.worker.id])).rows[0]!.full_since;

/** Every offer `w` gives back, from now on. */
function givenBackBy(w: TestWorker): { runId: string; reason: string }[] {
  const list: { runId: string; reason: string }[] = [];
  w.worker.events.on("offerGivenBack", (e) => list.push(e));
  return list;
}

beforeAll(async () => {
  te = await startTestEngine({ clock });
});
afterAll(async () => {
  await te?.close();
});

describe("the full flag", () => {
  it("is written when the last free slot is taken and when one is free again, not for each run", async () => {
    const w = await startTestWorker(te, [busy], { concurrency: 2, timerLoop: false });
    const recorded: boolean[] = [];
    w.worker.events.on("fullnessRecorded", (e) => recorded.push(e.full));
    expect(await fullSince(w)).toBeNull();
    const first = await occupySlot([w]);
    const full = w.worker.events.next("fullnessRecorded");
    const second = await occupySlot([w]);
    expect(await full).toEqual({ full: true, changed: true });
    // One slot taken was no news: the only write is the transition to full, stamped by the worker's clock.
    expect(recorded).toEqual([true]);
    expect(await fullSince(w)).toEqual(clock.now());
    // Guarded: a second "full" changes nothing.
    expect(await markWorkerFull(te.db.pool, w.worker.id, clock.now())).toBe(false);

    const free = w.worker.events.next("fullnessRecorded");
    first.release();
    expect(await free).toEqual({ full: false, changed: true });
    expect(await fullSince(w)).toBeNull();
    const finished = w.worker.events.next("runFinished", (e) => e.runId === second.runId);
    second.release();
    await finished;
    expect(recorded).toEqual([true, false]);
    await w.stop();
  });

  it("is written again when the worker re-enters the registry while full", async () => {
    const w = await startTestWorker(te, [busy], { concurrency: 1, timerLoop: false });
    const full = w.worker.events.next("fullnessRecorded", (e) => e.full);
    const holder = await occupySlot([w]);
    await full;
    const since = await fullSince(w);
    expect(since).toEqual(clock.now());
    // Its row went missing (removed while it was unreachable): the next renewal enters it again, full.
    await te.db.pool.query(`DELETE FROM workers WHERE id = $1`, [w.worker.id]);
    await w.worker.checkExecutions();
    expect(await fullSince(w)).toEqual(since);
    holder.release();
    await w.stop();
  });
});

describe("choosing a worker with a free slot", () => {
  it("offers a resume to a worker with a free slot when the one that suspended the run is full: nothing is given back", async () => {
    // Two slots: a run of its own, one at a time, never fills it; two `busy` runs do, once (the
    // flag's only write, so the event awaited is that one).
    const suspender = await startTestWorker(te, [offered, busy], { concurrency: 2, timerLoop: false });
    // Three runs, so that a random choice between the two workers would show (1 in 8 to pass).
    const runs = [await suspendedOn(suspender), await suspendedOn(suspender), await suspendedOn(suspender)];
    const other = await startTestWorker(te, [offered], { concurrency: 4, timerLoop: false });
    const full = suspender.worker.events.next("fullnessRecorded", (e) => e.full);
    const holders = [await occupySlot([suspender]), await occupySlot([suspender])];
    await full;
    const givenBack = givenBackBy(suspender);
    for (const { id, tokenId } of runs) {
      const resumed = other.worker.events.next("runResumed", (e) => e.runId === id);
      const finished = other.worker.events.next("runFinished", (e) => e.runId === id);
      await complete(tokenId);
      // Offered to the free worker directly: not given back and claimed again through the fast path.
      expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "offer" });
      expect((await finished).status).toBe("COMPLETED");
      expect((await getRunRow(te, id)).worker_id).toBe(other.worker.id);
    }
    expect(givenBack).toEqual([]);
    for (const holder of holders) holder.release();
    await Promise.all([suspender.stop(), other.stop()]);
  });

  it("still offers a resume to the worker that suspended the run when it has a free slot", async () => {
    const suspender = await startTestWorker(te, [offered], { concurrency: 4, timerLoop: false });
    const runs = [await suspendedOn(suspender), await suspendedOn(suspender), await suspendedOn(suspender)];
    const other = await startTestWorker(te, [offered], { concurrency: 4, timerLoop: false });
    for (const { id, tokenId } of runs) {
      const resumed = suspender.worker.events.next("runResumed", (e) => e.runId === id);
      // Listened for before the completion: the run may finish before its commit's reply arrives.
      const finished = suspender.worker.events.next("runFinished", (e) => e.runId === id);
      await complete(tokenId);
      // Its copy of the ledger is used: the offer carried only what the completion resolved.
      expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "cache" });
      await finished;
    }
    await Promise.all([suspender.stop(), other.stop()]);
  });

  it("offers a resume even when every worker is full: the worker gives it back, and the run resumes once a slot is free", async () => {
    const suspender = await startTestWorker(te, [offered, busy], { concurrency: 2, timerLoop: false });
    const { id, tokenId } = await suspendedOn(suspender);
    const other = await startTestWorker(te, [offered, busy], { concurrency: 2, timerLoop: false });
    const bothFull = Promise.all([suspender, other].map((w) => w.worker.events.next("fullnessRecorded", (e) => e.full)));
    const holders: { release(): void }[] = [];
    for (let i = 0; i < 4; i++) holders.push(await occupySlot([suspender, other]));
    await bothFull;
    const givenBack = givenBackBy(suspender);
    const gaveBack = suspender.worker.events.next("offerGivenBack", (e) => e.runId === id);
    const completedAt = clock.now();
    await complete(tokenId);
    // Among full workers, the one that suspended the run is offered it; it has no slot and gives it back.
    expect(await gaveBack).toEqual({ runId: id, reason: "full" });
    expect(givenBack).toHaveLength(1);
    expect(await getRunRow(te, id)).toMatchObject({ status: "WAITING", attempt_number: 1, offered_at: null, resume_due_at: completedAt });
    // A slot frees up. The worker it is on claims the run from the give-back's NOTIFY (when that
    // arrives after the slot is free), or claims it from `runs` once the slot is free.
    const resumed = Promise.race([suspender, other].map((w) => w.worker.events.next("runResumed", (e) => e.runId === id)));
    const finished = Promise.race([suspender, other].map((w) => w.worker.events.next("runFinished", (e) => e.runId === id)));
    holders[0]!.release();
    expect(await resumed).toMatchObject({ attempt: 1, via: expect.stringMatching(/^(fast-path|claimed)$/) });
    expect((await finished).status).toBe("COMPLETED");
    for (const holder of holders.slice(1)) holder.release();
    await Promise.all([suspender.stop(), other.stop()]);
  });
});
