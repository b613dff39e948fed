import { setTimeout as sleep } from "node:timers/promises";
import { ValidationError } from "../../errors.ts";

/**
 * How fast a retention sweep deletes: `batchSize` rows per statement (each in a transaction of its
 * own), and after each batch a rest `restRatio` times as long as the batch took. The sweep then
 * keeps one database connection (and a Postgres backend's CPU) busy for at most
 * 1 / (1 + restRatio) of the time, and leaves the rest to triggers and resumes; since the rest
 * scales with the batch, a database that is busy (slower batches) is also left longer alone.
 * The workers' RUN_RETENTION_BATCH_SIZE and RUN_RETENTION_REST_RATIO.
 */
export interface RetentionPace {
  /** Rows per statement (runs, waitpoints, session records …). @default 1000 */
  batchSize: number;
  /** Rest after each batch, as a multiple of the time it took; 0: none. @default 9 */
  restRatio: number;
}

/**
 * The default pace: 1,000 runs per statement, a rest 9 times as long as each batch (the sweep
 * busy a tenth of its time). Chosen from BENCH=history at 1,200,000 runs on two cores
 * (bench/README.md, "the retention sweep's pace"): deleting a day of history under a trigger +
 * resume load, a rest of 1x slowed their p99 by up to 1.57x and 4x by up to 1.23x, while 9x stayed
 * within 1.2x in all four sweeps, deleting 870-1,060 runs a second (75-92 million a day).
 */
export const DEFAULT_RETENTION_PACE: RetentionPace = { batchSize: 1000, restRatio: 9 };

export const MIN_RETENTION_BATCH_SIZE = 10;
export const MAX_RETENTION_BATCH_SIZE = 10_000;
export const MAX_RETENTION_REST_RATIO = 1000;

/**
 * The longest rest between two batches. Only a batch far slower than usual meets it (a 5 s wait
 * behind a lock, times the ratio): so that one such batch does not stall the sweep for minutes,
 * while a sweep slowed by a busy database still rests in proportion.
 */
export const MAX_REST_MS = 10_000;

/** Checks a pace; throws a ValidationError naming the setting and its range. */
export function validateRetentionPace(pace: RetentionPace): RetentionPace {
  const { batchSize, restRatio } = pace;
  if (!Number.isInteger(batchSize) || batchSize < MIN_RETENTION_BATCH_SIZE || batchSize > MAX_RETENTION_BATCH_SIZE) {
    throw new ValidationError(`retention: batch size must be a whole number from ${MIN_RETENTION_BATCH_SIZE} to ${MAX_RETENTION_BATCH_SIZE} rows, not ${batchSize}`);
  }
  if (!Number.isFinite(restRatio) || restRatio < 0 || restRatio > MAX_RETENTION_REST_RATIO) {
    throw new ValidationError(`retention: rest ratio must be a number from 0 (no rest) to ${MAX_RETENTION_REST_RATIO}, not ${restRatio}`);
  }
  return pace;
}

/** The rest after a batch that took `batchMs`: `restRatio` times as long, at most MAX_REST_MS; under 1 ms, none. */
export function restAfter(batchMs: number, restRatio: number): number {
  const restMs = Math.min(MAX_REST_MS, batchMs * restRatio);
  return restMs >= 1 ? restMs : 0;
}

/**
 * What pacing reads and waits on. The stopwatch is real time on purpose: it measures database work, which the engine's injected clock would read as zero.
 * Tests inject one that makes each batch take a set time and records the rests.
 */
export interface PaceTimer {
  /** A monotonic reading, in ms. */
  elapsedMs(): number;
  /** Waits `ms`; returns early (without throwing) once `signal` aborts. */
  rest(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realPaceTimer: PaceTimer = {
  elapsedMs: () => performance.now(),
  async rest(ms, signal) {
    await sleep(ms, undefined, { signal }).catch((error: unknown) => {
      // The worker is stopping: the sweep ends after this batch.
      if ((error as Error)?.name !== "AbortError") throw error;
    });
  },
};

/**
 * Spaces a sweep's batches out: runs each batch, then rests restAfter(its time). A rest is
 * skipped once `signal` aborts.
 */
export function pacedBatches(restRatio: number, timer: PaceTimer, signal?: AbortSignal): <T>(batch: () => Promise<T>) => Promise<T> {
  return async (batch) => {
    const started = timer.elapsedMs();
    const result = await batch();
    const restMs = restAfter(timer.elapsedMs() - started, restRatio);
    if (restMs > 0 && !signal?.aborted) await timer.rest(restMs, signal);
    return result;
  };
}
