import { NotificationListener } from "@svc/runtime/db";
import { CHANNELS } from "@svc/runtime/engine";
import { BOSS_NOTIFY_CHANNEL, isRunsQueueName, wakeChannel } from "@svc/queue";
import { offersChannel } from "../registry/workers.ts";
import type { TimerLoop } from "../timers/timer-loop.ts";
import type { Executions } from "./executions.ts";
import type { FastPath } from "./fast-path.ts";
import type { ListenerLock, Offers } from "./offers.ts";
import type { QueuedRuns } from "./queued-runs.ts";
import type { Slots } from "./slots.ts";
import type { WorkerResources } from "./resources.ts";

/** The parts a NOTIFY is for. */
export interface ChannelTargets {
  slots: Slots;
  timers: TimerLoop;
  executions: Executions;
  offers: Offers;
  fastPath: FastPath;
  queuedRuns: QueuedRuns;
}

/**
 * The worker's LISTEN connection and where each channel goes: this worker's job wake-ups (new jobs
 * in the queues named, sent to it alone: wakeWorkers) and pg-boss's channel (heard by every worker:
 * jobs no registered worker was woken for) to the slots' consumer, timer wake-ups to the timer
 * loop, cancels to the executions, this worker's offers to Offers, due resumes to the fast path.
 * Its session lock is what the registry entry names.
 */
export class Channels implements ListenerLock {
  readonly #listener: NotificationListener;

  constructor({ worker, config, report }: WorkerResources, { slots, timers, executions, offers, fastPath, queuedRuns }: ChannelTargets) {
    const ownOffers = offersChannel(worker.id);
    const ownJobs = wakeChannel(worker.id);
    this.#listener = new NotificationListener({
      url: config.databaseUrl,
      channels: [CHANNELS.resume, CHANNELS.runCanceled, CHANNELS.timers, BOSS_NOTIFY_CHANNEL, ownOffers, ownJobs],
      onNotification(channel, payload) {
        // A wake-up names start queues with new jobs, and queues with new runs to claim from `runs`.
        if (channel === ownJobs) {
          for (const queue of payload.split(" ")) {
            if (isRunsQueueName(queue)) queuedRuns.notify();
            else slots.notify(queue);
          }
          return;
        }
        if (channel === BOSS_NOTIFY_CHANNEL) return isRunsQueueName(payload) ? queuedRuns.notify() : slots.notify(payload);
        if (channel === CHANNELS.timers) return timers.wake(dueAt(payload));
        if (channel === CHANNELS.runCanceled) return executions.active.abortRun(payload, new Error("run canceled"));
        if (channel === ownOffers) return offers.take(payload);
        if (channel === CHANNELS.resume) return fastPath.resume(payload);
      },
      onReconnect: () => {
        slots.notify();
        queuedRuns.notify();
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
