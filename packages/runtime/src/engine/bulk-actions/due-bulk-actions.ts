import { dueAt } from "../timers/due-times.ts";
import type { DueWork } from "../timers/due-work.ts";
import { processNextChunk, type BulkRunFailure, type ChunkResult } from "./process-chunk.ts";

export interface BulkActionWorkOptions {
  /** Runs per chunk. @default BULK_ACTION_CHUNK_SIZE (100) */
  chunkSize?: number;
  /** Told of every chunk that committed (the worker emits it as an event). */
  onChunk?: (chunk: ChunkResult) => void;
  /** Told of each run a chunk could not cancel or replay for an error (the worker reports it). */
  onRunFailed?: (failure: BulkRunFailure) => void;
}

/**
 * Pending bulk actions as time-driven work in the workers' timer loops: due as soon as one is
 * PENDING (createBulkAction NOTIFYs `svc_timers`). A fire does one chunk (process-chunk.ts) and
 * answers 1, or 0 when no action was free: the loop then looks at what else is due before the
 * next chunk, so a large action never holds up timeouts and resumes for more than a chunk. Any
 * number of workers run it; each chunk is done by one, and a chunk a dying worker left is done
 * again by the next.
 */
export function bulkActionWork(options: BulkActionWorkOptions = {}): DueWork {
  return {
    name: "bulk-actions",
    async fire(deps, _now, _limit, tally) {
      const chunk = await processNextChunk(deps, options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize });
      if (!chunk) return 0;
      if (chunk.canceledRuns > 0) tally?.finished("CANCELED", chunk.canceledRuns);
      if (chunk.replayedRuns > 0) tally?.triggered(chunk.replayedRuns, "bulkAction");
      for (const failure of chunk.failures) options.onRunFailed?.(failure);
      options.onChunk?.(chunk);
      return 1;
    },
    ...dueAt(`SELECT min(updated_at) AS at FROM bulk_actions WHERE status = 'PENDING'`),
  };
}
