import type { Clock } from "../clock.ts";
import type { Pool } from "../db/queryable.ts";
import { retryWrite } from "../db/retry-write.ts";
import { applyMetadataOperations, type MetadataOperation, type RunMetadata } from "../engine/metadata/operations.ts";
import { flushRunMetadata, loadRunMetadata, type NumberedOperation, type StoredRunMetadata } from "../engine/metadata/run-metadata-store.ts";

/** How often the operations task code makes are stored while it runs (Trigger.dev's: 1 s). */
export const METADATA_FLUSH_INTERVAL_MS = 1000;

export type MetadataTarget = NumberedOperation["target"];

/** What RunMetadataBuffer uses of its execution. */
export interface MetadataExecution {
  deps: { db: Pool; clock: Clock };
  environmentId: string;
  runId: string;
  claimToken: string;
  /** The ledger epoch the execution replays: a retry after a failure has a new one. */
  epoch: number;
  /** The run's stored metadata as its claim read it; null: read it (load()). */
  stored: StoredRunMetadata | null;
  isFenced(): boolean;
  /** Whether the execution may write (not fenced; an offered run checks once that its offer stands). */
  mayWrite(): Promise<boolean>;
  fence(): void;
  /** A flush that failed or was refused: told to the run's log, never to the code. */
  report(message: string, attributes: Record<string, unknown>): void;
}

/**
 * The run's metadata as task code sees and changes it (`metadata.*`): `current()` and `get()` read
 * a copy held in memory, and each change applies to that copy at once and is stored later — every
 * second, before each wait is recorded, and when the attempt ends — so that `metadata.set` costs
 * no round trip.
 *
 * Replays. Every operation gets a number, in the order the code makes it; the run stores how many
 * operations of the current ledger epoch it has (runs.metadata_ops). A replay of the code after a
 * wait makes the same operations with the same numbers, and those the run already has are skipped,
 * here and in the flush: an `increment` or `append` before a wait is applied once, however often
 * the code before the wait runs again, and a crash between two flushes loses nothing (the code
 * that runs again makes the unstored operations again). Operations inside a hook that is recorded
 * once (onStart, onResume…) are stored before the hook's record, and a replay that skips the hook
 * skips their numbers too (see DurableExecution.once).
 */
export class RunMetadataBuffer {
  readonly #execution: MetadataExecution;
  #store: RunMetadata = {};
  #isRoot = true;
  /** Operations of this epoch the stored metadata has (numbered below this). */
  #applied = 0;
  /** The number the next operation gets. */
  #next = 0;
  #pending: NumberedOperation[] = [];
  #loaded: Promise<void> | null = null;
  #isLoaded = false;
  #flushing: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(execution: MetadataExecution) {
    this.#execution = execution;
  }

  /** Reads the run's metadata once per execution (before the task's code runs). */
  load(): Promise<void> {
    return (this.#loaded ??= this.#load());
  }

  async #load(): Promise<void> {
    const { deps, environmentId, runId, epoch } = this.#execution;
    const stored = this.#execution.stored ?? (await retryWrite(() => loadRunMetadata(deps.db, environmentId, runId, epoch)));
    this.#store = stored.metadata;
    this.#applied = stored.applied;
    this.#isRoot = stored.isRoot;
    this.#isLoaded = true;
    // Operations made before the load (none, in practice): those the run has are dropped.
    const early = this.#pending;
    this.#pending = [];
    for (const o of early) this.#accept(o);
  }

  /** The metadata as the code sees it. */
  current(): RunMetadata {
    return this.#store;
  }

  /** How many operations the code made so far in this execution (their numbers are below it). */
  get issued(): number {
    return this.#next;
  }

  /** Takes `count` numbers without operations: those a recorded hook made in an earlier execution. */
  skip(count: number): void {
    this.#next += count;
  }

  /** One operation of the code, on the run (`self`), its parent or its root run. */
  add(target: MetadataTarget, op: MetadataOperation): void {
    if (this.#execution.isFenced()) return;
    const numbered: NumberedOperation = { index: this.#next++, target, op };
    if (!this.#isLoaded) {
      this.#pending.push(numbered);
      return;
    }
    this.#accept(numbered);
  }

  #accept(numbered: NumberedOperation): void {
    if (numbered.index < this.#applied) return;
    // A run without a parent is its own parent and root (Trigger.dev's runIdIsRoot).
    const target = this.#isRoot ? "self" : numbered.target;
    if (target === "self") {
      const { metadata, unapplied } = applyMetadataOperations(this.#store, [numbered.op]);
      if (unapplied.length > 0) {
        this.#execution.report("a metadata operation was not applied", { operation: numbered.op });
        return;
      }
      this.#store = metadata;
    }
    this.#pending.push({ ...numbered, target });
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, METADATA_FLUSH_INTERVAL_MS);
    this.#timer.unref?.();
  }

  /** Stops the periodic flush (the execution ended). */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /**
   * Stores the operations made so far (one flush at a time; a call while one runs waits for it and
   * then stores what is left). Failures are reported to the run's log, never thrown to the code.
   */
  flush(): Promise<void> {
    const next = this.#flushing.then(() => this.#flushNow());
    this.#flushing = next;
    return next;
  }

  async #flushNow(): Promise<void> {
    if (this.#pending.length === 0 || !this.#isLoaded) return;
    const execution = this.#execution;
    if (execution.isFenced() || !(await execution.mayWrite())) return;
    const operations = this.#pending;
    this.#pending = [];
    const upTo = this.#next;
    try {
      const result = await retryWrite(() =>
        flushRunMetadata(execution.deps, { environmentId: execution.environmentId, runId: execution.runId, claimToken: execution.claimToken, epoch: execution.epoch, upTo, operations }),
      );
      if (result.kind === "fenced") {
        execution.fence();
        return;
      }
      if (result.kind === "too_large") execution.report(`metadata operations were not stored: ${result.message}`, { operations: operations.length });
      this.#applied = result.applied;
      // The stored metadata (with any change from outside the run), and the operations made since.
      let store = result.metadata;
      for (const o of this.#pending) if (o.target === "self") store = applyMetadataOperations(store, [o.op]).metadata;
      this.#store = store;
    } catch (error) {
      this.#pending = [...operations, ...this.#pending];
      this.#schedule();
      execution.report("metadata could not be stored", { error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Stores what the code changed, then reads the run's metadata again (changes made from outside the run show). */
  async refresh(): Promise<void> {
    await this.flush();
    if (this.#execution.isFenced()) return;
    const { deps, environmentId, runId, epoch } = this.#execution;
    const stored = await retryWrite(() => loadRunMetadata(deps.db, environmentId, runId, epoch));
    let store = stored.metadata;
    for (const o of this.#pending) if (o.target === "self") store = applyMetadataOperations(store, [o.op]).metadata;
    this.#store = store;
  }
}
