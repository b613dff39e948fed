import type { DueWork } from "../timers/fire-due.ts";
import { sweepEnvironment, type RetentionCounts } from "./sweep-environment.ts";
import { DEFAULT_RETENTION_PACE, realPaceTimer, validateRetentionPace, type PaceTimer } from "./pacing.ts";
import { addMissingSweeps, claimDueSweep, holdSweep, nextSweepDue, recordSweep, releaseSweep } from "./sweeps-store.ts";

const DAY_MS = 86_400_000;

export interface RunRetentionOptions {
  /** Days finished runs are kept in environments without a setting of their own (RUN_RETENTION_DAYS); 0: forever. */
  defaultDays: number;
  /** How often each environment is swept (RUN_RETENTION_INTERVAL_SECONDS). */
  intervalMs: number;
  /** Rows per statement (RUN_RETENTION_BATCH_SIZE, 10–10,000). @default DEFAULT_RETENTION_PACE.batchSize (1000) */
  batchSize?: number;
  /**
   * Rest after each batch, as a multiple of the time the batch took (RUN_RETENTION_REST_RATIO,
   * 0–1000): the sweep's share of a connection is 1 / (1 + restRatio).
   * @default DEFAULT_RETENTION_PACE.restRatio (9)
   */
  restRatio?: number;
  /** Times batches and waits out rests. @default realPaceTimer */
  paceTimer?: PaceTimer;
  /** Told of every complete sweep (the worker logs those that deleted anything). */
  onSwept?: (sweep: EnvironmentSweep) => void;
}

export interface EnvironmentSweep {
  environmentId: string;
  days: number;
  deleted: RetentionCounts;
  durationMs: number;
}

/**
 * The retention sweep as time-driven work: sweeps every environment whose sweep is due (each
 * `intervalMs`), one environment at a time, claimed in the database so that any number of workers
 * can run it and each sweep has one worker (retention_sweeps). An environment keeps finished runs
 * for its own `run_retention_days`, else its parent's (preview branches), else `defaultDays`; 0
 * keeps them forever. Returns how many runs it deleted.
 *
 * A sweep deletes a batch per transaction and can take a while (a first sweep of a large
 * database): the worker runs this on a loop of its own, so that it never delays timeouts and
 * resumes, and the loop's stop aborts `signal` between batches.
 */
export function runRetention(options: RunRetentionOptions): DueWork {
  // Checked here, so that a worker given a bad pace fails at its start rather than at its first sweep.
  const { batchSize, restRatio } = validateRetentionPace({
    batchSize: options.batchSize ?? DEFAULT_RETENTION_PACE.batchSize,
    restRatio: options.restRatio ?? DEFAULT_RETENTION_PACE.restRatio,
  });
  const timer = options.paceTimer ?? realPaceTimer;
  return {
    name: "run-retention",
    async fire(deps, now, _limit, _tally, signal) {
      await addMissingSweeps(deps.db, now);
      const holdUntil = () => new Date(deps.clock.now().getTime() + options.intervalMs);
      let runs = 0;
      while (!signal?.aborted) {
        const claim = await claimDueSweep(deps.db, now, holdUntil(), options.defaultDays);
        if (!claim) break;
        if (claim.days === 0) continue; // kept forever: looked at again in intervalMs
        const started = deps.clock.now().getTime();
        const { deleted, complete } = await sweepEnvironment(deps.db, {
          environmentId: claim.environmentId,
          cutoff: new Date(now.getTime() - claim.days * DAY_MS),
          now,
          batchSize,
          restRatio,
          timer,
          signal,
          hold: () => holdSweep(deps.db, claim.environmentId, holdUntil()),
        });
        runs += deleted.runs;
        if (!complete) {
          await releaseSweep(deps.db, claim.environmentId, deps.clock.now());
          break;
        }
        await recordSweep(deps.db, claim.environmentId, deps.clock.now(), deleted);
        options.onSwept?.({ environmentId: claim.environmentId, days: claim.days, deleted, durationMs: deps.clock.now().getTime() - started });
      }
      return runs;
    },
    nextDue: nextSweepDue,
  };
}
