// Resume offers that carry only what a completion changed (migration 0027): a worker keeps the
// ledger of each run it suspended; a completion offers the run back to that worker with only the
// entries it resolved, and the worker resumes from its copy. Covered here: the offer goes to that
// worker and is small, replay is unchanged (each step once), a copy that is behind is never used,
// a worker that kept no copy loads the ledger, and one killed with -9 takes its copies with it.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNELS, completeToken, createToken, triggerRun, withTransaction } from "@svc/runtime/engine";
import { step, task, wait } from "@svc/runtime";
import { getRunRow, startTestEngine, startTestWorker, type TestEngine, type TestWorker } from "./harness.ts";

let te: TestEngine;

/** A step, then three waits, one of them keyed (epoch -1): a ledger of steps, waits and a keyed entry. */
let sideEffects = 0;
const conversation = task({
  id: "conversation",
  run: async (payload: { tokens: string[] }) => {
    const side = await step.run("side", async () => ++sideEffects);
    const outputs: number[] = [];
    for (const [i, tokenId] of payload.tokens.entries()) {
      const result = await wait.forToken<{ n: number }>(tokenId, i === 1 ? { idempotencyKey: "keyed-wait" } : undefined);
      outputs.push(result.ok ? result.output.n : -1);
    }
    return { side, outputs };
  },
});

/** A step's recorded value, returned after a wait: what a replay finds in the ledger it resumes from. */
const recorded = task({
  id: "recorded",
  run: async (payload: { tokenId: string }) => {
    const value = await step.run("value", async () => "recorded");
    await wait.forToken(payload.tokenId);
    return value;
  },
});

const newToken = async () => (await createToken(te.engine, te.env.id, { timeout: "1h" })).waitpoint.id;
const complete = (tokenId: string, output: unknown) => withTransaction(te.db.pool, (tx) => completeToken(te.engine, tx, tokenId, output));
const suspendedBy = async (runId: string) => (await getRunRow(te, runId)).suspended_worker_id;

/**
 * Listens on workers' offer channels: the offers' payloads, parsed, by worker id. The tap hears a
 * NOTIFY on a connection of its own, so it may hear an offer after the worker has acted on it:
 * `received(id, n)` waits until it has heard `n` offers to that worker.
 */
async function offerTap(workerIds: string[]) {
  const client = new pg.Client({ connectionString: te.db.url });
  await client.connect();
  const offers = new Map<string, Record<string, any>[]>(workerIds.map((id) => [id, []]));
  const waiters: { id: string; n: number; resolve: () => void }[] = [];
  client.on("notification", (m) => {
    const id = m.channel.slice(CHANNELS.offersPrefix.length);
    offers.get(id)?.push(JSON.parse(m.payload!));
    for (const w of waiters.filter((w) => w.id === id && offers.get(id)!.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  for (const id of workerIds) await client.query(`LISTEN "${CHANNELS.offersPrefix}${id}"`);
  const received = (id: string, n: number) =>
    offers.get(id)!.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ id, n, resolve }));
  return { offers, received, close: () => client.end() };
}

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => {
  await te?.close();
});

describe("offers to the worker that suspended the run", () => {
  let a: TestWorker;
  let b: TestWorker;
  beforeAll(async () => {
    [a, b] = await Promise.all([startTestWorker(te, [conversation, recorded]), startTestWorker(te, [conversation, recorded])]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it("go to that worker with only the entries the completion resolved, and the run resumes from the worker's copy, each step once", async () => {
    const tokens = [await newToken(), await newToken(), await newToken()];
    const tap = await offerTap([a.worker.id, b.worker.id]);
    const byId = new Map([a, b].map((w) => [w.worker.id, w]));
    const suspensions = [a, b].map((w) => w.worker.events.next("runSuspended"));
    const { id } = await triggerRun(te.engine, te.env, "conversation", { tokens });
    await Promise.race(suspensions);
    try {
      for (const [i, tokenId] of tokens.entries()) {
        // Whichever worker took the start holds the run from then on: it is the one offered it.
        const holder = byId.get((await suspendedBy(id))!)!;
        const other = holder === a ? b : a;
        const resumed = holder.worker.events.next("runResumed", (e) => e.runId === id);
        const next = i < tokens.length - 1 ? holder.worker.events.next("runSuspended", (e) => e.runId === id) : holder.worker.events.next("runFinished", (e) => e.runId === id);
        await complete(tokenId, { n: i + 1 });
        expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "cache", replayedEntries: i + 2 });
        await next;
        // The offer carried the one entry this completion resolved, not the ledger.
        await tap.received(holder.worker.id, i + 1);
        const offer = tap.offers.get(holder.worker.id)!.at(-1)!;
        expect(offer.ledger).toMatchObject({ version: 2 * i + 2, resolved: [{ step_key: ["#1", "key:keyed-wait", "#2"][i], resolved: true }] });
        expect(offer.ledger.resolved).toHaveLength(1);
        expect(offer.ledger).not.toHaveProperty("entries");
        expect(tap.offers.get(other.worker.id)).toEqual([]);
      }
    } finally {
      await tap.close();
    }
    const row = await getRunRow(te, id);
    expect(row.status).toBe("COMPLETED");
    expect(JSON.parse(row.output!).json).toEqual({ side: 1, outputs: [1, 2, 3] });
    expect(sideEffects).toBe(1);
    // Three suspensions and three resolutions.
    expect(row.ledger_version).toBe(6);
  });

  it("never uses a copy that is behind: a ledger changed behind the worker's back is loaded", async () => {
    const tokenId = await newToken();
    const suspensions = [a, b].map((w) => w.worker.events.next("runSuspended"));
    const { id } = await triggerRun(te.engine, te.env, "recorded", { tokenId });
    await Promise.race(suspensions);
    const holder = (await suspendedBy(id)) === a.worker.id ? a : b;
    // A writer the worker's copy did not see: it changes the step's value, and says so.
    await te.db.pool.query(
      `UPDATE run_ledger SET outcome = '{"ok":true,"value":"{\\"json\\":\\"changed\\"}"}' WHERE run_id = $1 AND kind = 'step'`,
      [id],
    );
    await te.db.pool.query(`UPDATE runs SET ledger_version = ledger_version + 1 WHERE id = $1`, [id]);
    const resumed = holder.worker.events.next("runResumed", (e) => e.runId === id);
    const finished = holder.worker.events.next("runFinished", (e) => e.runId === id);
    await complete(tokenId, {});
    expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "claim" });
    expect((await finished).status).toBe("COMPLETED");
    expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("changed");
  });
});

describe("a worker without its copy", () => {
  it("loads the ledger when it keeps none", async () => {
    const w = await startTestWorker(te, [recorded], { ledgerCache: { maxRuns: 0, maxBytes: 0 } });
    try {
      const tokenId = await newToken();
      const suspended = w.worker.events.next("runSuspended");
      const { id } = await triggerRun(te.engine, te.env, "recorded", { tokenId });
      await suspended;
      const resumed = w.worker.events.next("runResumed", (e) => e.runId === id);
      const finished = w.worker.events.next("runFinished", (e) => e.runId === id);
      await complete(tokenId, {});
      expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "claim", replayedEntries: 2 });
      expect((await finished).status).toBe("COMPLETED");
      expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("recorded");
    } finally {
      await w.stop();
    }
  });

  it("killed with -9, takes its copies with it: the run is offered whole to a live worker", async () => {
    const dead = await startTestWorker(te, [recorded]);
    const tokenId = await newToken();
    const suspended = dead.worker.events.next("runSuspended");
    const { id } = await triggerRun(te.engine, te.env, "recorded", { tokenId });
    await suspended;
    await dead.kill();
    const live = await startTestWorker(te, [recorded]);
    try {
      expect(await suspendedBy(id)).toBe(dead.worker.id);
      const resumed = live.worker.events.next("runResumed", (e) => e.runId === id);
      const finished = live.worker.events.next("runFinished", (e) => e.runId === id);
      await complete(tokenId, {});
      expect(await resumed).toMatchObject({ via: "offer", ledgerFrom: "offer", replayedEntries: 2 });
      expect((await finished).status).toBe("COMPLETED");
      expect(JSON.parse((await getRunRow(te, id)).output!).json).toBe("recorded");
    } finally {
      await live.stop();
      await te.db.pool.query(`DELETE FROM workers WHERE id = $1`, [dead.worker.id]);
    }
  });
});
