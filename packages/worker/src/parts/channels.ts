import { NotificationListener } from "@svc/runtime/db";
import { CHANNELS, wakeChannel } from "@svc/runtime/engine";
import { offersChannel } from "../registry/workers.ts";
import type { TimerLoop } from "../timers/timer-loop.ts";
import type { Executions } from "./executions.ts";
import type { FastPath } from "./fast-path.ts";
import type { ListenerLock, Offers } from "./offers.ts";
import type { ReadyRuns } from "./ready-runs.ts";
import type { WorkerResources } from "./resources.ts";

/** The parts a NOTIFY is for. */
export interface ChannelTargets {
  timers: TimerLoop;
  executions: Executions;
  offers: Offers;
  fastPath: FastPath;
  readyRuns: ReadyRuns;
}

/**
 * The worker's LISTEN connection and where each channel goes: this worker's wake-ups (runs ready in
 * its queues, sent to it alone: wakeWorkers) and its environment's svc_runs_ready (heard by every
 * worker) to its claims from `runs`, timer wake-ups to the timer loop, cancels to the executions,
 * this worker's offers to Offers, due resumes to the fast path.
 * Its session lock is what the registry entry names.
 */
export class Channels implements ListenerLock {
  readonly #listener: NotificationListener;

  constructor({ worker, config, report }: WorkerResources, { timers, executions, offers, fastPath, readyRuns }: ChannelTargets) {
    const ownOffers = offersChannel(worker.id);
    const ownWakeUps = wakeChannel(worker.id);
    this.#listener = new NotificationListener({
      url: config.databaseUrl,
      channels: [CHANNELS.resume, CHANNELS.runsReady, CHANNELS.runCanceled, CHANNELS.timers, CHANNELS.queuesChanged, ownOffers, ownWakeUps],
      onNotification(channel, payload) {
        // A wake-up names queues of this worker with runs ready to claim; svc_runs_ready, an
        // environment whose runs no registered worker was woken for.
        if (channel === ownWakeUps) return readyRuns.notify();
        if (channel === CHANNELS.runsReady) return payload === worker.environment.id ? readyRuns.notify() : undefined;
        // An operator paused, resumed, overrode or reset a queue of the environment.
        if (channel === CHANNELS.queuesChanged) return payload === worker.environment.id ? readyRuns.controlsChanged() : undefined;
        if (channel === CHANNELS.timers) return timers.wake(dueAt(payload));
        if (channel === CHANNELS.runCanceled) return executions.active.abortRun(payload, new Error("run canceled"));
        if (channel === ownOffers) return offers.take(payload);
        if (channel === CHANNELS.resume) return fastPath.resume(payload);
      },
      onReconnect: () => {
        // A queuesChanged NOTIFY may have been missed while disconnected.
        readyRuns.controlsChanged();
        timers.wake();
        // Offers follow the LISTEN connection: the registry must name the new one.
        offers.enter(this).catch((error) => report(error, "registry"));
      },
      onError: (error) => report(error, "listener"),
      holdSessionLock: true,
    });
  }

  get sessionLock(): string | null {
    return this.#listener.sessionLock;
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }
}

/** The time a timers NOTIFY says its item is due (an ISO timestamp), or none: due now ('', 'resume'; TimerLoop.wake reads an unreadable time as now too). */
function dueAt(payload: string): Date | undefined {
  return /^\d{4}-\d\d-\d\dT/.test(payload) ? new Date(payload) : undefined;
}
