import { retryWrite } from "../db/retry-write.ts";
import { retryWhileUnavailable } from "../db/unavailable.ts";
import { withTransaction, type Queryable } from "../db/queryable.ts";
import { resolveTime } from "../durations.ts";
import type { EngineDeps } from "../engine/deps.ts";
import type { RunTally } from "../engine/runs/run-tally.ts";
import { makeChannelWaitpoint, peekChannelRecord } from "../engine/sessions/channel-waits.ts";
import type { ChannelArrivals } from "../engine/sessions/in-arrivals.ts";
import { endAndContinueInTransaction } from "../engine/sessions/manage-session.ts";
import { trimOut, waitOutputJson } from "../engine/sessions/records.ts";
import { getSession } from "../engine/sessions/store.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { never } from "../sdk/never.ts";
import type { ChannelRecord, ChannelWaitOptions, RawChannelResult, WaitOptions } from "../sdk/run-context.ts";
import type { RunChannelOutput } from "./channel-output.ts";
import type { LedgerEntry } from "./entries.ts";
import { holdClaim, type WaitRequest } from "./ledger-store.ts";
import type { LedgerSession } from "./replay.ts";
import { channelRecordOf, channelWaitResult } from "./wait-results.ts";

type StepKey = { stepKey: string; epoch: number };

/** What the session operations use of their execution (DurableExecution's recording and fencing). */
export interface ExecutionCore {
  deps: EngineDeps;
  env: Environment;
  runId: string;
  claimToken: string;
  ledger: LedgerSession;
  /** What wakes session.in.once; null: once() throws. */
  arrivals: ChannelArrivals | null;
  output: RunChannelOutput;
  isFenced(): boolean;
  mayWrite(): Promise<boolean>;
  fence(): void;
  /** Whether a resolved entry may be passed (a keyed one is marked used by this attempt first). */
  passes(key: StepKey, entry: LedgerEntry): boolean | Promise<boolean>;
  /** Records a wait on a waitpoint (made by `makeWaitpoint` in the same transaction) and suspends unless it is finished. */
  register(wait: WaitRequest): Promise<unknown>;
  /** Makes a step's value in the transaction that records it, under the claim. */
  recordStep<T>(key: StepKey, name: string, make: (tx: Queryable) => Promise<T>): Promise<T>;
  /** The value a replay finds recorded at `key`, or null. */
  replayedStep<T>(key: StepKey, name: string): { value: T } | null;
  /** Hears of the session runs a hand-over started (the worker's metrics). */
  tally: RunTally;
}

/**
 * What a run's code does with sessions besides appending to `.out` (RunChannelOutput): waits on
 * `.in` (checkpointed, or keeping the slot with once), peeks, trims `.out`, hands the session over.
 * Each is recorded in the ledger, so a replay gets the same records at the same places; the
 * cursor of each channel (`<ref>:in`) follows the records the code received.
 */
export class RunSessionChannels {
  readonly #cursors = new Map<string, number>();

  constructor(private readonly core: ExecutionCore) {}

  async waitForChannel(sessionRef: string, options?: ChannelWaitOptions): Promise<RawChannelResult> {
    const { core } = this;
    const now = core.deps.clock.now();
    const key = core.ledger.nextKey(options?.idempotencyKey);
    const target = `${sessionRef}:in`;
    const entry = core.ledger.lookup(key, "session", target, now);
    if (entry?.resolved) {
      const passes = core.passes(key, entry);
      return passes === true || (await passes) ? this.#waited(target, entry.outcome) : never();
    }
    const timeoutAt = options?.timeout === undefined ? null : resolveTime(options.timeout, now, "timeout");
    const afterSeq = this.#cursors.get(target) ?? null;
    const makeWaitpoint = async (tx: Queryable) => ({
      id: await makeChannelWaitpoint(core.deps, tx, {
        runId: core.runId,
        environmentId: core.env.id,
        sessionRef,
        io: "in",
        afterSeq,
        timeoutAt,
        // register flushed `.out` first: every record numbered so far is stored.
        outAppended: core.output.appended(sessionRef),
      }),
    });
    const outcome = await core.register({ key, kind: "session", target, existingWaitpointId: entry?.waitpointId ?? null, options, makeWaitpoint });
    return this.#waited(target, outcome);
  }

  async onceChannel(sessionRef: string, timeoutMs: number): Promise<RawChannelResult> {
    const { core } = this;
    const key = core.ledger.nextKey();
    const target = `${sessionRef}:in`;
    const replayed = core.replayedStep<{ record?: ChannelRecord }>(key, "session.in.once");
    if (replayed) return this.#received(target, replayed.value);
    if (!core.arrivals) throw new Error("session.in.once(): this worker does not listen for session records");
    const session = await retryWhileUnavailable(() => getSession(core.deps.db, core.env.id, sessionRef));
    const deadline = core.deps.clock.now().getTime() + timeoutMs;
    const afterSeq = this.#cursors.get(target) ?? null;
    const peek = (db: Queryable) => peekChannelRecord(db, { runId: core.runId, environmentId: core.env.id, sessionRef: session.id, io: "in", afterSeq });
    for (;;) {
      // Watching before looking: a record appended in between wakes the watch.
      const watch = await core.arrivals.watch(session.id, afterSeq ?? -1);
      const row = await retryWhileUnavailable(() => peek(core.deps.db));
      const remaining = deadline - core.deps.clock.now().getTime();
      if (row || remaining <= 0) {
        watch.cancel();
        // Recorded with the record the code gets (handed over like a wait's), or the timeout.
        const value = await core.recordStep(key, "session.in.once", async (tx) => {
          if (!row) return {};
          await tx.query(`UPDATE sessions SET in_delivered = greatest(in_delivered, $2) WHERE id = $1`, [session.id, row.seq]);
          return { record: channelRecordOf(JSON.parse(waitOutputJson(row))) };
        });
        return this.#received(target, value);
      }
      await watch.wait(remaining);
      if (core.isFenced()) return never();
    }
  }

  async peekChannel(sessionRef: string): Promise<ChannelRecord | undefined> {
    const { core } = this;
    const key = core.ledger.nextKey();
    const afterSeq = this.#cursors.get(`${sessionRef}:in`) ?? null;
    const replayed = core.replayedStep<ChannelRecord | null>(key, "session.in.peek");
    const record = replayed
      ? replayed.value
      : await core.recordStep(key, "session.in.peek", async (tx) => {
          const row = await peekChannelRecord(tx, { runId: core.runId, environmentId: core.env.id, sessionRef, io: "in", afterSeq });
          return row ? channelRecordOf(JSON.parse(waitOutputJson(row))) : null;
        });
    return record ?? undefined;
  }

  /** Drops `.out` records below `below`: after the appends before it, fenced by the claim; idempotent, so a replay may do it again. */
  async trimChannel(sessionRef: string, below: number): Promise<void> {
    const { core } = this;
    await core.output.flush();
    if (!(await core.mayWrite())) return never();
    const done = await retryWrite(() =>
      withTransaction(core.deps.db, async (tx) => ((await holdClaim(tx, core.runId, core.claimToken)) ? (await trimOut(tx, core.env.id, sessionRef, below), true) : false)),
    );
    if (!done) {
      core.fence();
      return never();
    }
  }

  async continueSession(sessionRef: string, reason: string): Promise<{ runId: string; swapped: boolean }> {
    const { core } = this;
    await core.output.flush();
    const key = core.ledger.nextKey();
    const replayed = core.replayedStep<{ runId: string; swapped: boolean }>(key, "session.endAndContinue");
    if (replayed) return replayed.value;
    const continued = await core.recordStep(key, "session.endAndContinue", (tx) =>
      endAndContinueInTransaction(core.deps, tx, core.env, sessionRef, { callingRunId: core.runId, reason }),
    );
    // Recorded, so committed: a hand-over that started the session's next run made one run (a
    // replay returned the recorded value above and counts nothing).
    if (continued.swapped) core.tally.triggered(1, "session");
    return continued;
  }

  /** A channel wait's result; the cursor moves past the record it returns. */
  #waited(target: string, outcome: unknown): RawChannelResult {
    const result = channelWaitResult(outcome);
    if (result.ok) this.#advance(target, result.record.seq);
    return result;
  }

  /** A once's recorded result. */
  #received(target: string, value: { record?: ChannelRecord }): RawChannelResult {
    if (!value.record) return { ok: false, error: { name: "WaitpointTimeoutError", code: "TIMED_OUT", message: "session.in.once() timed out" } };
    this.#advance(target, value.record.seq);
    return { ok: true, record: value.record };
  }

  #advance(target: string, seq: number): void {
    this.#cursors.set(target, Math.max(this.#cursors.get(target) ?? 0, seq));
  }
}
