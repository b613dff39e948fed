import { retryWrite } from "../db/retry-write.ts";
import { withTransaction, type Queryable } from "../db/queryable.ts";
import type { EngineDeps } from "../engine/deps.ts";
import { parseSuperjson, stringifySuperjson } from "../engine/runs/superjson-text.ts";
import { never } from "../sdk/never.ts";
import { KEYED_EPOCH, type LedgerEntry } from "./entries.ts";
import { holdClaim, markKeyedEntryUsed, recordStep } from "./ledger-store.ts";
import { parseStored, StepOutcomeSchema } from "./outcomes.ts";
import type { LedgerSession } from "./replay.ts";
import type { LedgerCopyTracker } from "./suspended-ledger.ts";

interface StepRecordsOptions {
  deps: EngineDeps;
  runId: string;
  claimToken: string;
  ledger: LedgerSession;
  ledgerCopy: LedgerCopyTracker;
  /** Whether the execution may write (its offer stands, it is not fenced). */
  mayWrite: () => Promise<boolean>;
  fence: () => void;
}

/**
 * An execution's step records in the ledger (DurableExecution's, and its session channels' and
 * streams'): a replayed step's value, a new step's record fenced by the claim (or made in the
 * transaction that records it), and resolved keyed entries marked as passed by this attempt. A
 * record the claim no longer allows fences the execution.
 */
export class StepRecords {
  readonly #o: StepRecordsOptions;

  constructor(options: StepRecordsOptions) {
    this.#o = options;
  }

  /**
   * Passes a resolved entry. A keyed entry that an earlier attempt recorded is first marked as
   * passed by this attempt, so that replays of this attempt pass it too once its key's TTL ran out
   * (see LedgerSession.lookup). False when the execution lost its claim (it is then fenced).
   */
  passes(key: { stepKey: string; epoch: number }, entry: LedgerEntry): boolean | Promise<boolean> {
    // Not a promise in the common case: replaying resolved entries costs no extra await each.
    if (key.epoch !== KEYED_EPOCH || entry.usedEpoch === this.#o.ledger.epoch) return true;
    return this.#markPassed(key, entry);
  }

  async #markPassed(key: { stepKey: string; epoch: number }, entry: LedgerEntry): Promise<boolean> {
    if (!(await this.#o.mayWrite())) return false;
    const attemptEpoch = this.#o.ledger.epoch;
    return this.#o.ledgerCopy.writing(async () => {
      const marked = await retryWrite(() =>
        markKeyedEntryUsed(this.#o.deps.db, { runId: this.#o.runId, claimToken: this.#o.claimToken, epoch: key.epoch, stepKey: key.stepKey, attemptEpoch }),
      );
      if (!marked) {
        this.#o.fence();
        return false;
      }
      this.#o.ledger.remember({ ...entry, usedEpoch: attemptEpoch });
      return true;
    });
  }


  /** A resolved step's recorded value, when the ledger has one at `key` (a replay). */
  replayed<T>(key: { stepKey: string; epoch: number }, name: string): { value: T } | null {
    const entry = this.#o.ledger.lookup(key, "step", name, this.#o.deps.clock.now());
    return entry?.resolved ? { value: parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, `the ledger outcome of step ${key.stepKey} (${name})`).value) as T } : null;
  }

  /** Records a step's value in the ledger, fenced by the claim. */
  async record<T>(key: { stepKey: string; epoch: number }, name: string, value: T): Promise<T> {
    return this.#write(key, name, (record) => record(this.#o.deps.db, value));
  }

  /**
   * Makes a step's value inside the transaction that records it, only while the claim is ours:
   * what `make` writes commits with the record or not at all.
   */
  async makeAndRecord<T>(key: { stepKey: string; epoch: number }, name: string, make: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#write(key, name, (record) =>
      withTransaction(this.#o.deps.db, async (tx) => ((await holdClaim(tx, this.#o.runId, this.#o.claimToken)) ? record(tx, await make(tx)) : null)),
    );
  }

  async #write<T>(
    key: { stepKey: string; epoch: number },
    name: string,
    write: (record: (db: Queryable, value: T) => Promise<{ value: T; outcome: unknown } | null>) => Promise<{ value: T; outcome: unknown } | null>,
  ): Promise<T> {
    if (!(await this.#o.mayWrite())) return never();
    const record = async (db: Queryable, value: T) => {
      const outcome = { ok: true, value: stringifySuperjson(value) };
      const input = { runId: this.#o.runId, claimToken: this.#o.claimToken, epoch: key.epoch, stepKey: key.stepKey, kind: "step" as const, target: name, outcome, now: this.#o.deps.clock.now() };
      return (await recordStep(db, input)) ? { value, outcome } : null;
    };
    const recorded = await this.#o.ledgerCopy.writing(async () => {
      const written = await retryWrite(() => write(record));
      if (written) this.#o.ledger.remember({ stepKey: key.stepKey, epoch: key.epoch, kind: "step", target: name, waitpointId: null, resolved: true, outcome: written.outcome, expiresAt: null });
      return written;
    });
    if (!recorded) {
      this.#o.fence();
      return never();
    }
    return recorded.value;
  }
}

/** How many metadata operations a recorded hook made (its record's value; older records have none). */
export function metadataOpsOf(entry: LedgerEntry): number {
  const value = parseSuperjson(parseStored(StepOutcomeSchema, entry.outcome, "a hook's ledger record").value) as { metadataOps?: unknown } | null;
  return typeof value?.metadataOps === "number" ? value.metadataOps : 0;
}
