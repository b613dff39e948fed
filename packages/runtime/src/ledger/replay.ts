import { KEYED_EPOCH, NondeterminismError, type LedgerEntry, type LedgerKind } from "./entries.ts";
import { StepKeys } from "./step-keys.ts";

/**
 * An execution's view of its ledger: hands out step keys in call order and answers, for each
 * durable call, whether it was already recorded (replay) — refusing a recorded entry of another
 * kind or target with a NondeterminismError that names both.
 */
export class LedgerSession {
  readonly #entries = new Map<string, LedgerEntry>();
  readonly #keys = new StepKeys();
  readonly epoch: number;

  constructor(epoch: number, entries: LedgerEntry[]) {
    this.epoch = epoch;
    for (const e of entries) this.#entries.set(`${e.epoch}|${e.stepKey}`, e);
  }

  /** Resolves the key of the next durable call: `#n` by call order, or `key:<k>` for keyed calls. */
  nextKey(idempotencyKey?: string): { stepKey: string; epoch: number } {
    if (idempotencyKey) {
      if (idempotencyKey.includes("\u0000")) throw new Error("A wait's idempotencyKey cannot contain a NUL character");
      return { stepKey: StepKeys.keyed(asStored(idempotencyKey)), epoch: KEYED_EPOCH };
    }
    return { stepKey: this.#keys.nextOrdinal(), epoch: this.epoch };
  }

  /**
   * The key of a lifecycle hook's record: in this attempt's epoch, or, for what happens once per
   * run (onStart), in the keyed epoch that retries keep.
   */
  hookKey(name: string, scope: "attempt" | "run"): { stepKey: string; epoch: number } {
    return { stepKey: StepKeys.hook(name), epoch: scope === "run" ? KEYED_EPOCH : this.epoch };
  }

  /**
   * Whether the code is still replaying: the next unkeyed durable call has a record in this
   * attempt (a resumed run has not yet got back to where its previous execution stopped).
   */
  replaying(): boolean {
    return this.#entries.has(`${this.epoch}|${this.#keys.peekOrdinal()}`);
  }

  /** The key the next unkeyed durable call will take (what a log line logged now comes before). */
  nextPosition(): { stepKey: string; epoch: number } {
    return { stepKey: this.#keys.peekOrdinal(), epoch: this.epoch };
  }

  /** The entry at `key` as the session knows it, without the checks of lookup. */
  at(key: { stepKey: string; epoch: number }): LedgerEntry | undefined {
    return this.#entries.get(`${key.epoch}|${key.stepKey}`);
  }

  /**
   * The recorded entry at `key`, if any and still valid (a keyed entry past its TTL counts as absent).
   * Throws NondeterminismError when the recorded kind or target differs from the request.
   *
   * The TTL only decides whether a later attempt may pass a keyed wait by its key. A replay of the
   * attempt that recorded the entry, or already passed it by its key (`usedEpoch`), must take the
   * path it took before: a key expiring while that attempt waits (a `wait.for` as long as its
   * TTL) otherwise sent every resume into a fresh wait, forever.
   */
  lookup(key: { stepKey: string; epoch: number }, kind: LedgerKind, target: string | null, now: Date): LedgerEntry | null {
    const entry = this.#entries.get(`${key.epoch}|${key.stepKey}`);
    if (!entry) return null;
    if (entry.expiresAt && entry.expiresAt.getTime() <= now.getTime() && entry.usedEpoch !== this.epoch) return null;
    if (entry.kind !== kind || (target !== null && entry.target !== null && asStored(entry.target) !== asStored(target))) {
      throw new NondeterminismError(key.stepKey, { kind: entry.kind, target: entry.target }, { kind, target });
    }
    return entry;
  }

  /** Keeps the session in step with what was just written. */
  remember(entry: LedgerEntry): void {
    this.#entries.set(`${entry.epoch}|${entry.stepKey}`, entry);
  }

  /** The resolved entries of a kind and target, in no particular order (what a replay will pass). */
  *resolved(kind: LedgerKind, target: string): Iterable<LedgerEntry> {
    for (const entry of this.#entries.values()) if (entry.resolved && entry.kind === kind && entry.target === target) yield entry;
  }

  /** Every entry as the session knows it now (a copy of the list: entries themselves are never changed in place). */
  entries(): LedgerEntry[] {
    return [...this.#entries.values()];
  }

  get size(): number {
    return this.#entries.size;
  }
}

/**
 * Text as Postgres stores it: half a surrogate pair (a name cut inside an emoji) becomes U+FFFD.
 * Recorded keys and targets come back that way, and must still match the code's own.
 */
function asStored(text: string): string {
  return text.toWellFormed();
}
