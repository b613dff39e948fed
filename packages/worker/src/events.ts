import { EventEmitter } from "node:events";
import type { ChunkResult, EnvironmentSweep, RunStatus, RunTally, TriggeredBy } from "@svc/runtime/engine";
import type { Via } from "./execution/via.ts";

/** Typed, past-tense worker events; tests await them instead of sleeping. */
export interface WorkerEventMap {
  runStarted: { runId: string; taskId?: string; attempt: number; replayedEntries: number; via?: Via };
  /**
   * `waitResolvedAt`: when the wait it resumes from was completed (the latest resolution in its
   * ledger), for the resume-latency metric. `ledgerFrom`: where its ledger came from (read by the
   * claim, carried whole by the offer, or this worker's copy plus what the offer resolved).
   */
  runResumed: { runId: string; taskId?: string; attempt: number; replayedEntries: number; via: Via; ledgerFrom: "claim" | "offer" | "cache"; waitResolvedAt: Date | null };
  runSuspended: { runId: string; taskId?: string };
  /** `error`: why it did not complete (FAILED, TIMED_OUT …: the error it records). */
  runFinished: { runId: string; taskId?: string; status: string; error?: { name?: string; message: string } };
  /** Runs this worker created: child runs of task code, scheduled runs its timers fired, a session's next run (a hand-over in task code). */
  runsTriggered: { count: number; by: TriggeredBy };
  /**
   * Runs this worker ended other than by finishing an execution (runFinished tells those one by
   * one): its timers' EXPIRED (a TTL passed before the run started) and CRASHED (the lease of a
   * run's last attempt lapsed).
   */
  runsEnded: { status: RunStatus; count: number };
  runRetryScheduled: { runId: string; taskId?: string; attempt: number; at: Date; error?: { name?: string; message: string } };
  runAbandoned: { runId: string; reason: string };
  /**
   * A resume offered to this worker that it gave back without running it: no slot was free (the
   * completion thought one was, or every live worker was full), or the worker is stopping. The run
   * waits again, its resume due at once (another worker claims it).
   */
  offerGivenBack: { runId: string; reason: "full" | "draining" };
  /** The registry now says whether this worker is full (written when its last free slot was taken, or one is free again). */
  /** The registry row says `full` now; `changed`: this write changed it (false: it already said so, or the row is missing). */
  fullnessRecorded: { full: boolean; changed: boolean };
  /** The retention loop swept an environment (any environment of the database, not only this worker's). */
  environmentSwept: EnvironmentSweep;
  /** This worker's timer loop did a chunk of a bulk action (of any environment of the database, not only this worker's). */
  bulkActionChunk: ChunkResult;
  /** A batch of what runs logged was stored (`capped`: runs whose log reached its cap with it). */
  runLogsWritten: { runIds: string[]; stored: number; dropped: number; capped: string[] };
  /**
   * A claim of a rate-limited queue took fewer runs than it could and left `waiting` ready runs
   * for their rate (0: none); `dueAt`: when the first of them may start (null: none waits);
   * `newlyDelayed`: how many of those no claim had held back before (each run is counted once).
   */
  rateLimited: { queue: string; waiting: number; dueAt: Date | null; newlyDelayed: number };
  /** A pass of its claims from `runs` (the plain claim, then each limited queue's) ended; `full`: its slots ran out first. */
  claimsPassed: { full: boolean };
  error: { error: unknown; where: string };
}

/** The tally the engine's run-creating and run-ending work reports to: it emits runsTriggered and runsEnded. */
export function runTallyOf(events: WorkerEvents): RunTally {
  return {
    triggered: (count, by) => events.emit("runsTriggered", { count, by }),
    finished: (status, count) => events.emit("runsEnded", { status, count }),
  };
}

export class WorkerEvents {
  readonly #emitter = new EventEmitter();
  constructor() {
    this.#emitter.setMaxListeners(0);
  }
  emit<K extends keyof WorkerEventMap>(name: K, payload: WorkerEventMap[K]): void {
    // EventEmitter throws an "error" event nobody listens to; the worker's onError option already
    // reports it, and throwing here would kill the loop that caught the error.
    if (name === "error" && this.#emitter.listenerCount("error") === 0) return;
    this.#emitter.emit(name, payload);
  }
  on<K extends keyof WorkerEventMap>(name: K, listener: (payload: WorkerEventMap[K]) => void): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }
  /** The next `name` event matching `predicate` (rejects after `timeoutMs` so a test fails instead of hanging). */
  next<K extends keyof WorkerEventMap>(name: K, predicate: (payload: WorkerEventMap[K]) => boolean = () => true, timeoutMs = 20_000): Promise<WorkerEventMap[K]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for worker event "${name}"`));
      }, timeoutMs);
      const off = this.on(name, (payload) => {
        if (!predicate(payload)) return;
        clearTimeout(timer);
        off();
        resolve(payload);
      });
    });
  }
}
