// A takeover of an EXECUTING run (its previous holder's lease lapsed, e.g. through a Postgres outage:
// the lapse pass queues the run again and another worker claims it) may race the previous holder,
// which can be alive and still writing. Whatever the interleaving, a step the previous holder recorded is either
// in the ledger the claim loads, or its record was refused (the holder is then fenced): never both
// recorded and missing from the new execution's ledger, which would run the step again.
//
// Each race is set up deterministically on two connections, without sleeps: one side's transaction
// is held open until the other side's statement has started (and, when they conflict, is blocked).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { holdClaim, markKeyedEntryUsed, recordStep, triggerRun, type Queryable } from "@svc/runtime/engine";
import { findLapsed, requeueLapsed } from "../../runtime/src/engine/runs/transitions/lapse.ts";
import { claimReady, type Claim } from "../src/execution/claim.ts";
import { blockedBackends, eventually, startTestEngine, type TestEngine } from "./harness.ts";

let te: TestEngine;

beforeAll(async () => {
  te = await startTestEngine();
});
afterAll(async () => te?.close());

/** A run worker A executes (claim token `claim-a`) whose lease lapsed a second ago: A may still be writing. */
async function executingRun(): Promise<string> {
  const { id } = await triggerRun(te.engine, te.env, "takeover", {});
  await te.db.pool.query(
    `UPDATE runs SET status = 'EXECUTING', claim_token = 'claim-a', attempt_number = 1, worker_id = 'worker_a',
       lease_expires_at = now() - interval '1 second', started_at = now() WHERE id = $1`,
    [id],
  );
  return id;
}

const step = (runId: string, db: Queryable, stepKey = "step#0") =>
  recordStep(db, { runId, claimToken: "claim-a", epoch: 0, stepKey, kind: "step", target: "before", outcome: { ok: true, value: "1" }, now: new Date() });

/**
 * The takeover: the lapse pass (its lock on the run, then the run queued again) and worker B's claim
 * from `runs`, on one connection (in one transaction when `db` holds one). It resolves once it has
 * taken the run: a holder's open transaction makes it wait, as a blocked statement would.
 */
let skippedPasses = 0;
const takeovers: [string, (runId: string, db: Queryable) => Promise<Claim | null>][] = [
  [
    "a lapsed lease's",
    async (runId, db) => {
      // The lapse pass skips a run whose row a live holder has locked (SKIP LOCKED): it comes back
      // to it on its next pass, as here, until the holder's transaction is over.
      for (;;) {
        const now = new Date();
        const lapsed = await findLapsed(db, now, 100);
        if (lapsed.some((r) => r.id === runId)) {
          await requeueLapsed(db, [runId], now);
          const claims = await claimReady(db, { id: "worker_b", version: "v1", environmentId: te.env.id, tasks: ["takeover"] }, 1, now, 15_000);
          return claims.find((c) => c.run.id === runId) ?? null;
        }
        skippedPasses++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  ],
];

/** Runs `work` in a transaction on its own connection and holds it open until `commit()`. */
async function openTransaction<T>(work: (db: Queryable) => Promise<T>): Promise<{ result: T; commit: () => Promise<void> }> {
  const client = await te.db.pool.connect();
  await client.query("BEGIN");
  const result = await work(client);
  return {
    result,
    commit: async () => {
      await client.query("COMMIT");
      client.release();
    },
  };
}

/** Starts `statement` and resolves once it has finished, is blocked on a lock, or passed the locked run by. */
async function startedOrBlocked<T>(statement: Promise<T>): Promise<void> {
  let done = false;
  const skipped = skippedPasses;
  void statement.finally(() => (done = true)).catch(() => {});
  await eventually(async () => done || skippedPasses > skipped || (await blockedBackends(te)) >= 1);
}

const hasStep = (claim: Claim, stepKey = "step#0") => claim.ledger.some((e) => e.stepKey === stepKey && e.resolved);

describe.each(takeovers)("%s takeover of an EXECUTING run, racing the live holder's writes", (_name, takeover) => {
  it("sees a step whose record committed while the claim waited (the holder wrote first)", async () => {
    const runId = await executingRun();
    const holder = await openTransaction((db) => step(runId, db));
    const claim = takeover(runId, te.db.pool);
    await startedOrBlocked(claim);
    await holder.commit();
    const claimed = await claim;
    expect(claimed).not.toBeNull();
    // Recorded and loaded, or refused: never recorded and missing.
    expect(holder.result === false || hasStep(claimed!)).toBe(true);
    expect(holder.result).toBe(true);
  });

  it("sees a step made and recorded under the held claim (holdClaim, then the record) while the claim waited", async () => {
    const runId = await executingRun();
    const holder = await openTransaction(async (db) => (await holdClaim(db, runId, "claim-a")) && (await step(runId, db)));
    expect(holder.result).toBe(true);
    const claim = takeover(runId, te.db.pool);
    await startedOrBlocked(claim);
    await holder.commit();
    const claimed = await claim;
    expect(claimed && hasStep(claimed)).toBe(true);
  });

  it("refuses the holder's record once the claim has taken the run (the claim wrote first)", async () => {
    const runId = await executingRun();
    const claimer = await openTransaction((db) => takeover(runId, db));
    expect(claimer.result).not.toBeNull();
    const record = step(runId, te.db.pool);
    await startedOrBlocked(record);
    await claimer.commit();
    const recorded = await record;
    expect(recorded === false || hasStep(claimer.result!)).toBe(true);
    expect(recorded).toBe(false);
    expect((await te.db.pool.query(`SELECT count(*)::int AS n FROM run_ledger WHERE run_id = $1`, [runId])).rows[0].n).toBe(0);
  });

  it("sees a keyed entry the holder marked as passed while the claim waited", async () => {
    const runId = await executingRun();
    await te.db.pool.query(
      `INSERT INTO run_ledger (run_id, epoch, step_key, kind, target, resolved, outcome, created_at, resolved_at) VALUES ($1, -1, 'key:k', 'step', 'k', true, '{"ok":true,"value":"1"}', now(), now())`,
      [runId],
    );
    const holder = await openTransaction((db) => markKeyedEntryUsed(db, { runId, claimToken: "claim-a", epoch: -1, stepKey: "key:k", attemptEpoch: 0 }));
    const claim = takeover(runId, te.db.pool);
    await startedOrBlocked(claim);
    await holder.commit();
    const claimed = await claim;
    const entry = claimed!.ledger.find((e) => e.stepKey === "key:k");
    expect(holder.result === false || entry?.usedEpoch === 0).toBe(true);
    expect(holder.result).toBe(true);
  });
});

describe("an offered run (a trigger's start, a completion's resume), whose worker recorded a step and died", () => {
  /** A run offered to worker A with claim token `claim-a`, its lease lapsed a second ago. */
  async function offeredRun(start: boolean): Promise<string> {
    const { id } = await triggerRun(te.engine, te.env, "takeover", {});
    await te.db.pool.query(
      `UPDATE runs SET status = 'EXECUTING', claim_token = 'claim-a', attempt_number = 1, worker_id = 'worker_a',
         offered_at = now() - interval '20 seconds', offered_start = $2, lease_expires_at = now() - interval '1 second', started_at = now() WHERE id = $1`,
      [id, start],
    );
    return id;
  }

  it.each([true, false])("is taken over as any execution: the next attempt's claim loads what it recorded (start offer: %s)", async (start) => {
    const runId = await offeredRun(start);
    // An offer is a claim: its execution writes under it from the first moment.
    expect(await step(runId, te.db.pool)).toBe(true);
    const claimed = await takeovers[0]![1](runId, te.db.pool);
    expect(claimed).toMatchObject({ run: { attempt_number: 2 } });
    expect(hasStep(claimed!)).toBe(true);
  });
});
