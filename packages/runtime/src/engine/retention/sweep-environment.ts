import type { Pool } from "../../db/queryable.ts";
import { inBatchTransaction } from "./batch-transaction.ts";
import { pacedBatches, type PaceTimer } from "./pacing.ts";
import { deleteRunBatch } from "./delete-runs.ts";
import { deleteWaitpointBatch } from "./delete-waitpoints.ts";
import { deleteEndedSession, deleteSessionRecordBatch, findEndedSessions } from "./delete-sessions.ts";
import { deleteScheduleTickBatch } from "./delete-schedule-ticks.ts";
import { deletePacketBatch } from "./delete-packets.ts";
import { deleteBulkActionBatch } from "./delete-bulk-actions.ts";
import { deleteRateWindowBatch } from "./delete-rate-windows.ts";
import { KEYSET_START, type Keyset } from "./keyset.ts";

/** What one sweep of an environment deleted, per kind of row. */
export interface RetentionCounts {
  runs: number;
  attempts: number;
  batches: number;
  waitpoints: number;
  sessions: number;
  sessionRecords: number;
  scheduleTicks: number;
  bulkActions: number;
  packets: number;
  /** Rate-limit logs of keys that started nothing for longer than any period (delete-rate-windows.ts). */
  rateLimitWindows: number;
}

export function noRetentionCounts(): RetentionCounts {
  return { runs: 0, attempts: 0, batches: 0, waitpoints: 0, sessions: 0, sessionRecords: 0, scheduleTicks: 0, bulkActions: 0, packets: 0, rateLimitWindows: 0 };
}

export interface SweepInput {
  environmentId: string;
  /** Rows older than this go (now − the environment's retention period). */
  cutoff: Date;
  now: Date;
  /** Rows per statement. */
  batchSize: number;
  /** Rest after each batch, as a multiple of the time it took (pacedBatches); 0: none. */
  restRatio: number;
  /** Times the batches and waits out the rests (realPaceTimer outside tests). */
  timer: PaceTimer;
  /** Stops the sweep between two batches (the worker is stopping). */
  signal?: AbortSignal | undefined;
  /** Called after each batch of runs, so a long sweep keeps its claim. */
  hold(): Promise<void>;
}

/**
 * Sweeps one environment: its old finished runs (with attempts, ledger, batches), then
 * completed waitpoints, ended sessions (records in batches, then the session), schedule ticks, ended
 * bulk actions, idle rate-limit logs and packets no run names any more, each `batchSize` rows per statement in a transaction of its own
 * (inBatchTransaction), so that no lock is held for longer than one batch, with a rest after each
 * (pacedBatches). Packets come last: the runs that named them are gone by then. Returns what it
 * deleted and whether it got to the end.
 */
export async function sweepEnvironment(db: Pool, input: SweepInput): Promise<{ deleted: RetentionCounts; complete: boolean }> {
  const deleted = noRetentionCounts();
  const { environmentId, cutoff, now, batchSize: limit, signal } = input;
  const stopped = () => signal?.aborted === true;
  const paced = pacedBatches(input.restRatio, input.timer, signal);
  const inBatch = <T>(fn: Parameters<typeof inBatchTransaction<T>>[1]) => paced(() => inBatchTransaction(db, fn));

  for (let after: Keyset | null = KEYSET_START; after && !stopped(); ) {
    const batch = await inBatch((tx) => deleteRunBatch(tx, { environmentId, cutoff, now, after: after!, limit }));
    deleted.runs += batch.runs;
    deleted.attempts += batch.attempts;
    deleted.batches += batch.batches;
    after = batch.next;
    await input.hold();
  }
  for (let after: Keyset | null = KEYSET_START; after && !stopped(); ) {
    const batch = await inBatch((tx) => deleteWaitpointBatch(tx, { environmentId, cutoff, now, after: after!, limit }));
    deleted.waitpoints += batch.waitpoints;
    after = batch.next;
  }
  for (let after: Keyset | null = KEYSET_START; after && !stopped(); ) {
    const found = await inBatch((tx) => findEndedSessions(tx, { environmentId, cutoff, after: after!, limit }));
    for (const sessionId of found.ended) {
      for (let n = limit; n === limit && !stopped(); ) {
        n = await inBatch((tx) => deleteSessionRecordBatch(tx, sessionId, limit));
        deleted.sessionRecords += n;
      }
      if (stopped()) break;
      if (await inBatch((tx) => deleteEndedSession(tx, sessionId, cutoff))) deleted.sessions += 1;
    }
    after = found.next;
  }
  for (let n = limit; n === limit && !stopped(); ) {
    n = await inBatch((tx) => deleteScheduleTickBatch(tx, environmentId, cutoff, limit));
    deleted.scheduleTicks += n;
  }
  for (let n = limit; n === limit && !stopped(); ) {
    n = await inBatch((tx) => deleteBulkActionBatch(tx, environmentId, cutoff, limit));
    deleted.bulkActions += n;
  }
  for (let n = limit; n === limit && !stopped(); ) {
    n = await inBatch((tx) => deleteRateWindowBatch(tx, environmentId, cutoff, now, limit));
    deleted.rateLimitWindows += n;
  }
  for (let after: Keyset | null = KEYSET_START; after && !stopped(); ) {
    const batch = await inBatch((tx) => deletePacketBatch(tx, { environmentId, cutoff, after: after!, limit }));
    deleted.packets += batch.packets;
    after = batch.next;
  }
  return { deleted, complete: !stopped() };
}
