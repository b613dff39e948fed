import { BUILT_IN_DUE_WORK, bulkActionWork, enterWorkerVersion, lapsedLeases, moveRunsOfChangedQueues, runRetention } from "@svc/runtime/engine";
import type { WorkerOptions } from "./worker-options.ts";
import type { WorkerEvents } from "./events.ts";
import { registerTasks } from "./tasks/register-tasks.ts";
import { TimerLoop } from "./timers/timer-loop.ts";
import { createBatchers } from "./parts/batchers.ts";
import { Channels } from "./parts/channels.ts";
import { Executions } from "./parts/executions.ts";
import { FastPath } from "./parts/fast-path.ts";
import { FullFlag } from "./parts/full-flag.ts";
import { Leases } from "./parts/leases.ts";
import { Offers } from "./parts/offers.ts";
import { ReadyRuns } from "./parts/ready-runs.ts";
import { startQueues } from "./parts/queues.ts";
import { createResources } from "./parts/resources.ts";
import { Slots } from "./parts/slots.ts";
import { captureConsole } from "./execution/console-capture.ts";

export type { WorkerOptions };

export interface Worker {
  readonly id: string;
  readonly events: WorkerEvents;
  readonly timers: TimerLoop;
  /** The retention sweep's loop; null without the `retention` option. */
  readonly retention: TimerLoop | null;
  /** How many runs it may execute at once. */
  readonly concurrency: number;
  /** How many of those slots are taken now (read by the metrics). */
  slotsInUse(): number;
  /** What the lease timer does every `leaseMs / 3` (tests with a FakeClock call it directly). */
  checkExecutions(): Promise<void>;
  start(): Promise<void>;
  /** Stops claiming, lets in-flight runs finish, then stops. */
  drain(): Promise<void>;
  /** Stops at once; in-flight runs are recovered by other workers (tests of crash recovery). */
  abandon(): Promise<void>;
}

/** The retention loop's longest sleep: a new environment's first sweep waits at most this. */
const RETENTION_MAX_SLEEP_MS = 60_000;

/**
 * A worker: claims the runs of one environment and executes them. Composed of named
 * parts (parts/), each built from the one WorkerResources object and given the parts it uses.
 */
export function createWorker(options: WorkerOptions): Worker {
  const resources = createResources(options);
  const { engine, worker, config, report } = resources;
  const batchers = createBatchers(resources);
  const executions = new Executions(resources, batchers);
  const fullFlag = new FullFlag(resources);
  const slots = new Slots(resources, executions, fullFlag);
  const offers = new Offers(resources, slots, batchers.declines, fullFlag);
  const readyRuns = new ReadyRuns(resources, slots);
  // A chunk of a bulk action per fire: the loop looks at timeouts and resumes between chunks.
  const bulkActions = bulkActionWork({
    onChunk: (chunk) => resources.events.emit("bulkActionChunk", chunk),
    onRunFailed: (failure) => report(new Error(`bulk action ${failure.bulkActionId}: run ${failure.runId} failed: ${(failure.error as Error)?.message ?? String(failure.error)}`, { cause: failure.error }), "bulk-actions"),
  });
  const timers = new TimerLoop(engine, [...BUILT_IN_DUE_WORK, lapsedLeases, bulkActions, ...config.dueWork], {
    maxSleepMs: config.timerMaxSleepMs,
    onError: (error) => report(error, "timers"),
    tally: resources.tally,
  });
  // Its own loop: a sweep may take a while, and must not hold up timeouts and resumes.
  const retention = options.retention
    ? new TimerLoop(engine, [runRetention({ ...options.retention, onSwept: (sweep) => resources.events.emit("environmentSwept", sweep) })], {
        maxSleepMs: RETENTION_MAX_SLEEP_MS,
        onError: (error) => report(error, "retention"),
      })
    : null;
  const channels = new Channels(resources, { timers, executions, offers, fastPath: new FastPath(resources, slots, readyRuns), readyRuns });
  const leases = new Leases(resources, executions.active, offers, channels);
  const runLogs = resources.hooks.runLogs;
  if (runLogs) {
    runLogs.listen({ written: (batch) => resources.events.emit("runLogsWritten", batch), report });
    // An execution's lines are written as soon as its end is (the end never waits for them).
    for (const ended of ["runFinished", "runSuspended", "runRetryScheduled", "runAbandoned"] as const) {
      resources.events.on(ended, (e) => void runLogs.runEnded(e.runId));
    }
  }
  /** Set while the worker is started: `console.*` inside its runs goes to their logs. */
  let releaseConsole: (() => void) | null = null;

  async function stopBackground() {
    readyRuns.stop();
    leases.stop();
    await Promise.all([timers.stop(), retention?.stop()]);
    await channels.stop();
    await resources.hooks.arrivals.stop();
    await resources.hooks.inputArrivals.stop();
    releaseConsole?.();
    releaseConsole = null;
    await runLogs?.flush();
    if (!resources.claimPool.ending) await resources.claimPool.end();
  }

  return {
    id: worker.id,
    events: resources.events,
    timers,
    retention,
    concurrency: config.concurrency,
    slotsInUse: () => slots.inUse,
    checkExecutions: () => leases.check(),
    async start() {
      // Before the tasks (whose registration enters an unknown version as unbounded) and any claim:
      // the run list's version filter reads where this version's claims are.
      await enterWorkerVersion(engine.db, worker.environment.id, worker.version, engine.clock.now());
      await registerTasks(engine.db, worker.environment.id, resources.tasks, worker.version, engine.clock.now());
      // A queue that got a limit, or lost it, has runs queued before on the other claim's side.
      await moveRunsOfChangedQueues(engine, worker.environment.id, [...startQueues(resources.tasks).keys()], engine.clock.now());
      await resources.hooks.onRegistered?.(resources.tasks);
      releaseConsole ??= captureConsole();
      await channels.start();
      await offers.enter(channels);
      await readyRuns.start();
      if (config.timerLoop) {
        timers.start();
        retention?.start();
      }
      leases.start();
    },
    async drain() {
      slots.close();
      readyRuns.stop();
      // No more offers; one already on its way is given back (Offers.take sees the slots draining).
      await offers.withdraw().catch((error) => report(error, "registry"));
      await slots.drain();
      await stopBackground();
    },
    async abandon() {
      slots.abandon();
      executions.abortAll(new Error("worker stopped"));
      await stopBackground();
    },
  };
}
