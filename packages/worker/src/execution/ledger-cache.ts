import type { LedgerEntry, SuspendedLedger } from "@svc/runtime/engine";

/** How much a worker keeps by default: the most recently suspended runs, up to either bound. */
export const LEDGER_CACHE_DEFAULTS = { maxRuns: 2_000, maxBytes: 16 * 1024 * 1024 };

/** What an entry is counted as besides its outcome's text (keys, ids, the objects themselves). */
const ENTRY_OVERHEAD_BYTES = 200;

interface Kept extends SuspendedLedger {
  bytes: number;
}

/**
 * The ledgers of the runs this worker suspended, kept so that a completion can offer a run back
 * with only the entries it resolved (svc_complete_waitpoint offers a run to the worker that
 * suspended it): a session's run has one entry per message, which the offer otherwise carries, or
 * past a NOTIFY's 8,000 bytes makes the worker load, every turn.
 *
 * Bounded, least recently suspended first out, by runs and by an estimate of the bytes held (the
 * lengths of the outcomes' texts). A copy is taken out when a resume uses it (the execution then
 * owns the ledger, and puts its own copy back if it suspends again) and used only at the version
 * the completion says it started from: a copy that is behind is dropped, and the ledger loaded.
 * A worker that restarts starts empty; nothing here is needed for correctness.
 */
export class LedgerCache {
  readonly #kept = new Map<string, Kept>();
  readonly #maxRuns: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(limits: { maxRuns: number; maxBytes: number } = LEDGER_CACHE_DEFAULTS) {
    this.#maxRuns = limits.maxRuns;
    this.#maxBytes = limits.maxBytes;
  }

  /** Keeps the ledger a run was suspended with (replacing what was kept of the run); too large a ledger is not kept. */
  put(runId: string, ledger: SuspendedLedger): void {
    this.#drop(runId);
    const bytes = sizeOf(ledger.entries);
    if (bytes > this.#maxBytes || this.#maxRuns === 0) return;
    this.#kept.set(runId, { ...ledger, bytes });
    this.#bytes += bytes;
    // Oldest first: a Map iterates in insertion order, and put always inserts anew.
    for (const [id] of this.#kept) {
      if (this.#kept.size <= this.#maxRuns && this.#bytes <= this.#maxBytes) break;
      this.#drop(id);
    }
  }

  /**
   * Takes out the run's ledger at `version` and `epoch` (whatever was kept of the run is gone
   * afterwards); null when none is kept at that version.
   */
  take(runId: string, version: number, epoch: number): LedgerEntry[] | null {
    const kept = this.#kept.get(runId);
    if (!kept) return null;
    this.#drop(runId);
    return kept.version === version && kept.epoch === epoch ? kept.entries : null;
  }

  /** How many runs' ledgers are kept. */
  get size(): number {
    return this.#kept.size;
  }

  /** The estimated bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  #drop(runId: string): void {
    const kept = this.#kept.get(runId);
    if (!kept) return;
    this.#kept.delete(runId);
    this.#bytes -= kept.bytes;
  }
}

/**
 * An estimate of what entries hold, cheap to compute: an overhead per entry and the length of the
 * texts in its outcome's top level (a step's value, a wait's output, as stored). An outcome that
 * is an object beyond that (an error) is serialised to be counted: rare.
 */
function sizeOf(entries: LedgerEntry[]): number {
  let bytes = 0;
  for (const entry of entries) {
    bytes += ENTRY_OVERHEAD_BYTES + entry.stepKey.length + (entry.target?.length ?? 0);
    const outcome = entry.outcome;
    if (outcome === null || typeof outcome !== "object") continue;
    for (const value of Object.values(outcome)) {
      if (typeof value === "string") bytes += value.length;
      else if (value !== null && typeof value === "object") bytes += JSON.stringify(value).length;
    }
  }
  return bytes;
}
