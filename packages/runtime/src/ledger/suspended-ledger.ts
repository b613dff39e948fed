import type { LedgerEntry } from "./entries.ts";

/**
 * A suspended execution's copy of its run's ledger, exactly the ledger at `version` (the run's
 * ledger_version, migration 0027): what a worker may keep to resume the run from, adding the
 * entries a later completion resolves (see svc_complete_waitpoint's offers).
 */
export interface SuspendedLedger {
  version: number;
  epoch: number;
  entries: LedgerEntry[];
}

/**
 * Tells whether an execution's in-memory ledger is still the stored one when it suspends: it must
 * have started from a known version, no other write of this execution may be under way, and the
 * suspension must have raised the version by exactly one (nothing else touched the ledger).
 */
export class LedgerCopyTracker {
  /** Writes to the run's ledger under way (sent, their result not yet in the session's ledger). */
  #writes = 0;
  #suspended: SuspendedLedger | null = null;

  /** `startVersion`: the run's ledger_version the execution's ledger was loaded at; null: unknown. */
  constructor(private readonly startVersion: number | null) {}

  /** Counts a write to the run's ledger as under way until `write` settles. */
  async writing<T>(write: () => Promise<T>): Promise<T> {
    this.#writes++;
    try {
      return await write();
    } finally {
      this.#writes--;
    }
  }

  /** Called inside the write that suspended the run (so one write, itself, is under way). */
  suspendedAt(version: number | null, epoch: number, entries: () => LedgerEntry[]): void {
    if (this.startVersion !== null && version !== null && version === this.startVersion + 1 && this.#writes === 1) {
      this.#suspended = { version, epoch, entries: entries() };
    }
  }

  /** The copy when it is exactly the ledger the suspension left; else null. */
  get suspended(): SuspendedLedger | null {
    return this.#suspended;
  }
}
