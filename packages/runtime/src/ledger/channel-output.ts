import { retryWrite } from "../db/retry-write.ts";
import type { EngineDeps } from "../engine/deps.ts";
import { appendRecords } from "../engine/sessions/append-record.ts";
import type { Environment } from "../engine/tenancy/environments.ts";
import { never } from "../sdk/never.ts";
import { ChannelOutQueue, type OutRecord } from "./channel-out-queue.ts";
import type { LedgerSession } from "./replay.ts";

/**
 * The `.out` records of one session in an execution: `next` numbers them in the order the code
 * appends; below `stored` they were stored by an earlier execution of this attempt (a replay).
 */
interface OutState {
  next: number;
  stored: number;
  queue: ChannelOutQueue;
}

/**
 * The `.out` appends of one execution of a run, per session. Each record's part id is
 * `<run>:<epoch>:<n>`, n its place among the code's appends to that session, so a replay makes the
 * same ones; the ones the attempt stored before its last channel wait are known from the ledger
 * and skipped without a round trip, and part ids catch any other repeat. Sends are fenced by the
 * run's claim.
 */
export class RunChannelOutput {
  readonly #out = new Map<string, OutState>();

  constructor(
    private readonly run: {
      deps: EngineDeps;
      env: Environment;
      runId: string;
      claimToken: string;
      ledger: LedgerSession;
      /** Whether the execution has stopped writing (it suspended, finished, or lost its claim). */
      isFenced: () => boolean;
      /** Called when the claim was lost. */
      fence: () => void;
    },
  ) {}

  /** Resolves once these records are stored. */
  append(sessionRef: string, records: { data: string | null; headers?: [string, string][] }[]): Promise<void> {
    const out = this.#state(sessionRef);
    return out.queue.push(records.map((r) => ({ ...r, index: out.next++ })));
  }

  /** How many records the code has appended to the session in this execution (stored or in flight). */
  appended(sessionRef: string): number {
    return this.#state(sessionRef).next;
  }

  /** Resolves once every record appended so far is stored (before a wait, and before the run ends). */
  async flush(): Promise<void> {
    for (const out of this.#out.values()) await out.queue.drain();
  }

  #state(sessionRef: string): OutState {
    let out = this.#out.get(sessionRef);
    if (!out) {
      const state: OutState = { next: 0, stored: this.#storedBeforeWaits(sessionRef), queue: null as unknown as ChannelOutQueue };
      state.queue = new ChannelOutQueue((batch) => this.#send(sessionRef, state, batch));
      this.#out.set(sessionRef, (out = state));
    }
    return out;
  }

  /**
   * How many `.out` records this attempt stored before its last channel wait on the session that
   * the ledger has (each wait's outcome records it: session_waits.out_appended).
   */
  #storedBeforeWaits(sessionRef: string): number {
    let stored = 0;
    for (const entry of this.run.ledger.resolved("session", `${sessionRef}:in`)) {
      const appended = (entry.outcome as { outAppended?: unknown } | null)?.outAppended;
      if (typeof appended === "number" && appended > stored) stored = appended;
    }
    return stored;
  }

  /**
   * Stores the records an earlier execution of the attempt has not (a replay's are skipped without
   * a write). An offered run does not wait here for its offer to be taken, unlike its other writes:
   * the append is fenced by the claim in the same statement (a withdrawn offer no longer holds it),
   * and it has no effect outside the database that a withdrawn offer would have to take back, so
   * the answer reaches the session's subscribers one round trip sooner.
   */
  async #send(sessionRef: string, state: OutState, records: OutRecord[]): Promise<void> {
    const epoch = this.run.ledger.epoch;
    const fresh = records.filter((r) => r.index >= state.stored);
    if (fresh.length === 0) return;
    if (this.run.isFenced()) return never();
    const inputs = fresh.map((r) => ({ data: r.data, ...(r.headers ? { headers: r.headers } : {}), partId: `${this.run.runId}:${epoch}:${r.index}` }));
    // One statement, fenced by the claim; subscribers get the records at its commit.
    const appended = await retryWrite(() => appendRecords(this.run.deps, this.run.env, sessionRef, "out", inputs, { runId: this.run.runId, claimToken: this.run.claimToken }));
    if (!appended) {
      this.run.fence();
      return never();
    }
  }
}
