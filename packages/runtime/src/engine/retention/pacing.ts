import { setTimeout as sleep } from "node:timers/promises";

/** The longest rest between two batches. */
const MAX_REST_MS = 1000;

/**
 * Spaces a sweep's batches out: after each, it rests `restRatio` times as long as the batch took,
 * so that a sweep keeps a database connection (and a Postgres backend's CPU) busy for at most
 * 1 / (1 + restRatio) of the time and leaves the rest to triggers and resumes. Deleting only has to
 * keep up with the runs an environment creates, which even at 1 / 2 it does many times over. The
 * stopwatch is real time on purpose (as pg-boss's around its queries): it measures database work,
 * which an injected clock would read as zero. A rest ends early when `signal` aborts.
 */
export function pacedBatches(restRatio: number, signal?: AbortSignal): <T>(batch: () => Promise<T>) => Promise<T> {
  return async (batch) => {
    const started = performance.now();
    const result = await batch();
    const restMs = Math.min(MAX_REST_MS, (performance.now() - started) * restRatio);
    if (restMs >= 1 && !signal?.aborted) {
      await sleep(restMs, undefined, { signal }).catch((error: unknown) => {
        // The worker is stopping: the sweep ends after this batch.
        if ((error as Error)?.name !== "AbortError") throw error;
      });
    }
    return result;
  };
}
